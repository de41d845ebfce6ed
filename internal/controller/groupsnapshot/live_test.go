package groupsnapshot

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	vgsv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	snapfake "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned/fake"
	snapinformers "github.com/kubernetes-csi/external-snapshotter/client/v8/informers/externalversions"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"

	"github.com/volplane/volplane/internal/controller/loop"
	"github.com/volplane/volplane/internal/grouping"
	"github.com/volplane/volplane/internal/snapshotapi"
)

// cachedController builds the controller half over the fakes (holding
// live) with its caches filled by hand with cached, and only them: an
// informer that lags behind the API server.
func cachedController(t *testing.T, live []runtime.Object, cached ...runtime.Object) (*Controller, *snapfake.Clientset) {
	t.Helper()
	client := fake.NewClientset()
	snaps := snapfake.NewSimpleClientset(live...)
	inf, sinf := informers.NewSharedInformerFactory(client, 0), snapinformers.NewSharedInformerFactory(snaps, 0)
	c, err := NewController(Config{Client: client, Snapshots: snaps, Informers: inf, SnapshotInformers: sinf, Recorder: record.NewFakeRecorder(10)})
	if err != nil {
		t.Fatal(err)
	}
	gi, si := sinf.Groupsnapshot().V1(), sinf.Snapshot().V1()
	for _, o := range cached {
		var err error
		switch o := o.(type) {
		case *vgsv1.VolumeGroupSnapshot:
			err = gi.VolumeGroupSnapshots().Informer().GetIndexer().Add(o)
		case *vgsv1.VolumeGroupSnapshotContent:
			err = gi.VolumeGroupSnapshotContents().Informer().GetIndexer().Add(o)
		case *snapv1.VolumeSnapshot:
			err = si.VolumeSnapshots().Informer().GetIndexer().Add(o)
		default:
			t.Fatalf("cannot cache %T", o)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return c, snaps
}

// A group being deleted, its content (Delete) and one member: the group
// made them just before (or its cache missed them across an API server
// restart), and the caches have seen none of them.
func deletedGroup() (*vgsv1.VolumeGroupSnapshot, *vgsv1.VolumeGroupSnapshotContent, *snapv1.VolumeSnapshot) {
	g := &vgsv1.VolumeGroupSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "grp", Namespace: "ns", UID: "g-uid",
		DeletionTimestamp: &metav1.Time{}, Finalizers: []string{snapshotapi.GroupBoundFinalizer}},
		Spec: vgsv1.VolumeGroupSnapshotSpec{Source: vgsv1.VolumeGroupSnapshotSource{Selector: &metav1.LabelSelector{}}}}
	content := &vgsv1.VolumeGroupSnapshotContent{ObjectMeta: metav1.ObjectMeta{Name: snapshotapi.GroupContentName("g-uid"),
		Finalizers: []string{snapshotapi.GroupContentFinalizer}},
		Spec: vgsv1.VolumeGroupSnapshotContentSpec{Driver: driver, DeletionPolicy: snapv1.VolumeSnapshotContentDelete,
			VolumeGroupSnapshotRef: v1.ObjectReference{Kind: grouping.GroupKind, APIVersion: grouping.GroupAPIVersion, Namespace: "ns", Name: "grp", UID: "g-uid"},
			Source:                 vgsv1.VolumeGroupSnapshotContentSource{VolumeHandles: []string{"h"}}}}
	member := &snapv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Name: grouping.MemberSnapshotName("g-uid", "h"), Namespace: "ns", UID: "m-uid",
		OwnerReferences: []metav1.OwnerReference{grouping.OwnerReference(g)}, Finalizers: []string{snapshotapi.InGroupFinalizer}}}
	return g, content, member
}

// The group's finalizer, the last step of its deletion, is not removed
// while a content or a member the caches have not seen is there (the
// content and its group snapshot, and the member, would be left behind):
// the group reads them live and deals with them first.
func TestDeletedGroupLooksForWhatItsCachesMissed(t *testing.T) {
	ctx := context.Background()
	g, content, member := deletedGroup()
	c, snaps := cachedController(t, []runtime.Object{g, content, member}, g)
	if _, err := c.syncGroup(ctx, "ns/grp"); err != nil {
		t.Fatal(err)
	}
	live, err := snaps.GroupsnapshotV1().VolumeGroupSnapshots("ns").Get(ctx, "grp", metav1.GetOptions{})
	if err != nil || !slices.Contains(live.Finalizers, snapshotapi.GroupBoundFinalizer) {
		t.Fatalf("group let go with its content unseen: %v %v", err, live)
	}
	gc, err := snaps.GroupsnapshotV1().VolumeGroupSnapshotContents().Get(ctx, content.Name, metav1.GetOptions{})
	if err != nil || gc.Annotations[snapshotapi.GroupBeingDeleted] == "" {
		t.Fatalf("content not marked being deleted: %v %v", err, gc)
	}

	// With the content gone, the member the cache missed is deleted
	// before the group goes.
	c, snaps = cachedController(t, []runtime.Object{g, member}, g)
	if _, err := c.syncGroup(ctx, "ns/grp"); err != nil {
		t.Fatal(err)
	}
	if _, err := snaps.SnapshotV1().VolumeSnapshots("ns").Get(ctx, member.Name, metav1.GetOptions{}); err == nil {
		t.Fatalf("member left behind")
	}
	live, _ = snaps.GroupsnapshotV1().VolumeGroupSnapshots("ns").Get(ctx, "grp", metav1.GetOptions{})
	if !slices.Contains(live.Finalizers, snapshotapi.GroupBoundFinalizer) {
		t.Fatalf("group let go in the same sync as its member's delete")
	}

	// Nothing left anywhere: the group goes.
	c, snaps = cachedController(t, []runtime.Object{g}, g)
	if _, err := c.syncGroup(ctx, "ns/grp"); err != nil {
		t.Fatal(err)
	}
	live, _ = snaps.GroupsnapshotV1().VolumeGroupSnapshots("ns").Get(ctx, "grp", metav1.GetOptions{})
	if slices.Contains(live.Finalizers, snapshotapi.GroupBoundFinalizer) {
		t.Fatalf("group kept with nothing left: %v", live.Finalizers)
	}
}

// The group's twin of the snapshot loop's bypassed snapshot: a DELETE
// that read the group before its finalizer was added removes it at once
// once it is, while the sync that added it creates its content. The
// group's delete event shows the finalizer with no deletion timestamp; the
// content made for it then gets its finalizer, the being-deleted mark and
// is deleted (the sidecar deletes the group snapshot). A relist's
// tombstone proves nothing: the content stays.
func TestContentOfAGroupDeletedPastItsFinalizerIsDeleted(t *testing.T) {
	ctx := context.Background()
	g, content, _ := deletedGroup()
	g.DeletionTimestamp = nil
	content.Finalizers = nil
	content.ResourceVersion = "1"
	c, snaps := cachedController(t, []runtime.Object{content}, content)
	var rv atomic.Int64
	rv.Store(1)
	snaps.PrependReactor("update", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		a.(k8stesting.UpdateAction).GetObject().(metav1.Object).SetResourceVersion(strconv.FormatInt(rv.Add(1), 10))
		return false, nil, nil
	})
	syncAll := func() {
		t.Helper()
		for range 5 {
			res, err := c.syncContent(ctx, content.Name)
			if err != nil {
				t.Fatal(err)
			}
			if res != loop.Again() {
				return
			}
		}
		t.Fatalf("content sync never done")
	}
	c.onGroupGone(cache.DeletedFinalStateUnknown{Key: "ns/grp", Obj: g})
	syncAll()
	if got, err := snaps.GroupsnapshotV1().VolumeGroupSnapshotContents().Get(ctx, content.Name, metav1.GetOptions{}); err != nil ||
		got.Annotations[snapshotapi.GroupBeingDeleted] != "" {
		t.Fatalf("content touched on a tombstone: %v %v", err, got)
	}
	c.onGroupGone(g)
	syncAll()
	var writes []string
	for _, a := range snaps.Actions() {
		if v := a.GetVerb(); v == "update" || v == "delete" {
			writes = append(writes, v)
		}
	}
	if _, err := snaps.GroupsnapshotV1().VolumeGroupSnapshotContents().Get(ctx, content.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("content of a group deleted past its finalizer kept after %v: %v", writes, err)
	}
	if got := strings.Join(writes, " "); got != "update update delete" {
		t.Errorf("writes %s, want the finalizer, the mark, the delete", got)
	}
}
