package snapshot

import (
	"context"
	"testing"

	vgsv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	snapfake "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned/fake"
	snapinformers "github.com/kubernetes-csi/external-snapshotter/client/v8/informers/externalversions"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/grouping"
	"github.com/volplane/volplane/internal/snapshotapi"
)

// A member snapshot "snap" of group "grp", being deleted, and its
// content under Delete.
func deletedMember() (*vgsv1.VolumeGroupSnapshot, *snapv1.VolumeSnapshot, *snapv1.VolumeSnapshotContent) {
	g := &vgsv1.VolumeGroupSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "grp", UID: "g-uid"}}
	vs := &snapv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "snap", UID: "u1", DeletionTimestamp: &metav1.Time{},
		OwnerReferences: []metav1.OwnerReference{grouping.OwnerReference(g)},
		Finalizers:      []string{snapshotapi.InGroupFinalizer, snapshotapi.AsSourceFinalizer, snapshotapi.BoundFinalizer}},
		Spec: snapv1.VolumeSnapshotSpec{Source: snapv1.VolumeSnapshotSource{PersistentVolumeClaimName: ptr.To("data")}},
		Status: &snapv1.VolumeSnapshotStatus{BoundVolumeSnapshotContentName: ptr.To("member-content"), ReadyToUse: ptr.To(true),
			VolumeGroupSnapshotName: ptr.To("grp")}}
	content := &snapv1.VolumeSnapshotContent{ObjectMeta: metav1.ObjectMeta{Name: "member-content", Finalizers: []string{snapshotapi.ContentFinalizer},
		Annotations: map[string]string{snapshotapi.GroupHandleAnnotation: "gh"}},
		Spec: snapv1.VolumeSnapshotContentSpec{Driver: "d", DeletionPolicy: snapv1.VolumeSnapshotContentDelete,
			Source:            snapv1.VolumeSnapshotContentSource{VolumeHandle: ptr.To("h")},
			VolumeSnapshotRef: corev1.ObjectReference{Namespace: "ns", Name: "snap", UID: "u1"}},
		Status: &snapv1.VolumeSnapshotContentStatus{SnapshotHandle: ptr.To("sh"), VolumeGroupSnapshotHandle: ptr.To("gh"), ReadyToUse: ptr.To(true)}}
	return g, vs, content
}

// syncWithGroups syncs ns/snap once with the group API served, the caches
// holding cached only.
func syncWithGroups(t *testing.T, snaps *snapfake.Clientset, cached ...runtime.Object) {
	t.Helper()
	syncWith(t, fake.NewClientset(), snaps, cached...)
}

// syncWith is syncWithGroups with the core API's objects of client (none
// cached).
func syncWith(t *testing.T, client *fake.Clientset, snaps *snapfake.Clientset, cached ...runtime.Object) {
	t.Helper()
	inf, sinf := informers.NewSharedInformerFactory(client, 0), snapinformers.NewSharedInformerFactory(snaps, 0)
	c, err := New(Config{Client: client, Snapshots: snaps, Informers: inf, SnapshotInformers: sinf, Recorder: record.NewFakeRecorder(10), Groups: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range cached {
		var err error
		switch o := o.(type) {
		case *snapv1.VolumeSnapshot:
			err = sinf.Snapshot().V1().VolumeSnapshots().Informer().GetIndexer().Add(o)
		case *snapv1.VolumeSnapshotContent:
			err = sinf.Snapshot().V1().VolumeSnapshotContents().Informer().GetIndexer().Add(o)
		default:
			t.Fatalf("cannot cache %T", o)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	// A member held by its group is retried (the error): the outcome is
	// what the tests look at.
	_, _ = c.syncSnapshot(context.Background(), "ns/snap")
}

// A member being deleted whose group the cache has not seen (just made,
// or missed across an API server restart) is still held by it: its
// in-group finalizer stays and its content is neither marked nor deleted
// (the group's data would go with it).
func TestDeletedMemberLooksForItsGroupLive(t *testing.T) {
	ctx := context.Background()
	g, vs, content := deletedMember()
	snaps := snapfake.NewSimpleClientset(g, vs, content)
	syncWithGroups(t, snaps, vs, content)
	got, err := snaps.SnapshotV1().VolumeSnapshots("ns").Get(ctx, "snap", metav1.GetOptions{})
	if err != nil || !hasString(got.Finalizers, snapshotapi.InGroupFinalizer) {
		t.Fatalf("member let go under its live group: %v %v", err, got)
	}
	c, err := snaps.SnapshotV1().VolumeSnapshotContents().Get(ctx, "member-content", metav1.GetOptions{})
	if err != nil || c.Annotations[snapshotapi.BeingDeleted] != "" {
		t.Fatalf("member content marked or deleted under its live group: %v %v", err, c)
	}

	// With the group gone, the member goes.
	_, vs, content = deletedMember()
	snaps = snapfake.NewSimpleClientset(vs, content)
	syncWithGroups(t, snaps, vs, content)
	got, err = snaps.SnapshotV1().VolumeSnapshots("ns").Get(ctx, "snap", metav1.GetOptions{})
	if err == nil && hasString(got.Finalizers, snapshotapi.InGroupFinalizer) {
		t.Fatalf("member of a group that is gone kept: %v", got.Finalizers)
	}
}

// A member the group loop made and deleted (with its group) before this
// loop gave it its own finalizers carries only the in-group one: with the
// group gone it goes, and its content under Delete is marked and deleted
// (it stayed Terminating, its content ready over a backend snapshot the
// group's deletion had removed).
func TestMemberDeletedBeforeItsFinalizersGoesWithItsGroup(t *testing.T) {
	ctx := context.Background()
	_, vs, content := deletedMember()
	vs.Finalizers = []string{snapshotapi.InGroupFinalizer}
	snaps := snapfake.NewSimpleClientset(vs, content)
	syncWithGroups(t, snaps, vs, content)
	got, err := snaps.SnapshotV1().VolumeSnapshots("ns").Get(ctx, "snap", metav1.GetOptions{})
	if err == nil && hasString(got.Finalizers, snapshotapi.InGroupFinalizer) {
		t.Fatalf("member of a group that is gone kept: %v", got.Finalizers)
	}
	c, err := snaps.SnapshotV1().VolumeSnapshotContents().Get(ctx, "member-content", metav1.GetOptions{})
	if err == nil && (c.Annotations[snapshotapi.BeingDeleted] == "" || c.DeletionTimestamp == nil) {
		// The fake deletes at once what has no deletion in progress; a
		// content still there must at least be marked and deleted.
		t.Fatalf("member content neither marked nor deleted: %+v", c.ObjectMeta)
	}
}

// A group made under the name of a member's deleted group is another
// group: it does not hold the member, which goes with its content under
// Delete (the reference, matching the name only, held it until the
// namesake went).
func TestNamesakeGroupDoesNotHoldAnotherGroupsMember(t *testing.T) {
	ctx := context.Background()
	_, vs, content := deletedMember()
	namesake := &vgsv1.VolumeGroupSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "grp", UID: "another-uid"}}
	snaps := snapfake.NewSimpleClientset(namesake, vs, content)
	syncWithGroups(t, snaps, vs, content)
	got, err := snaps.SnapshotV1().VolumeSnapshots("ns").Get(ctx, "snap", metav1.GetOptions{})
	if err == nil && hasString(got.Finalizers, snapshotapi.InGroupFinalizer) {
		t.Fatalf("member held by a namesake of its deleted group: %v", got.Finalizers)
	}
}
