package groupsnapshot

import (
	"context"
	"slices"
	"testing"

	vgsv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	snapfake "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned/fake"
	snapinformers "github.com/kubernetes-csi/external-snapshotter/client/v8/informers/externalversions"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"

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
