package snapshot

import (
	"context"
	"testing"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	snapfake "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned/fake"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/snapshotapi"
)

// Two snapshots of one claim: "snap" (uid u1) whose content is ready, and
// "next" (uid u2) that has just created its content. The soak (seed
// 987670) saw snap's release of the claim race next's content creation:
// the claim was then deleted, and its volume with it, under next.
func releaseRace() (claim *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume, class *snapv1.VolumeSnapshotClass,
	snap, next *snapv1.VolumeSnapshot, ready, nextContent *snapv1.VolumeSnapshotContent) {
	claim = &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "data", UID: "c1", ResourceVersion: "10",
		Finalizers: []string{snapshotapi.ClaimFinalizer}},
		Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv"}, Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound}}
	pv = &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv"}, Spec: corev1.PersistentVolumeSpec{
		ClaimRef:               &corev1.ObjectReference{Namespace: "ns", Name: "data", UID: "c1"},
		PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "d", VolumeHandle: "h"}}}}
	class = &snapv1.VolumeSnapshotClass{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Driver: "d", DeletionPolicy: snapv1.VolumeSnapshotContentDelete}
	mk := func(name string, uid types.UID) *snapv1.VolumeSnapshot {
		return &snapv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: uid,
			Finalizers: []string{snapshotapi.AsSourceFinalizer, snapshotapi.BoundFinalizer}},
			Spec: snapv1.VolumeSnapshotSpec{Source: snapv1.VolumeSnapshotSource{PersistentVolumeClaimName: ptr.To("data")},
				VolumeSnapshotClassName: ptr.To("c")}}
	}
	content := func(s *snapv1.VolumeSnapshot) *snapv1.VolumeSnapshotContent {
		return &snapv1.VolumeSnapshotContent{ObjectMeta: metav1.ObjectMeta{Name: snapshotapi.ContentName(s.UID), Finalizers: []string{snapshotapi.ContentFinalizer}},
			Spec: snapv1.VolumeSnapshotContentSpec{Driver: "d", DeletionPolicy: snapv1.VolumeSnapshotContentDelete,
				VolumeSnapshotClassName: ptr.To("c"), Source: snapv1.VolumeSnapshotContentSource{VolumeHandle: ptr.To("h")},
				VolumeSnapshotRef: corev1.ObjectReference{Namespace: "ns", Name: s.Name, UID: s.UID}}}
	}
	snap, next = mk("snap", "u1"), mk("next", "u2")
	snap.Status = &snapv1.VolumeSnapshotStatus{BoundVolumeSnapshotContentName: ptr.To("snapcontent-u1"), ReadyToUse: ptr.To(false)}
	ready, nextContent = content(snap), content(next)
	ready.Status = &snapv1.VolumeSnapshotContentStatus{SnapshotHandle: ptr.To("snap-h"), ReadyToUse: ptr.To(true), RestoreSize: ptr.To(int64(1))}
	return
}

// claimWrites counts the claim updates and gives each a newer
// resourceVersion, as the API server does.
func claimWrites(client *fake.Clientset) *[]*corev1.PersistentVolumeClaim {
	var writes []*corev1.PersistentVolumeClaim
	client.PrependReactor("update", "persistentvolumeclaims", func(a k8stesting.Action) (bool, runtime.Object, error) {
		c := a.(k8stesting.UpdateAction).GetObject().(*corev1.PersistentVolumeClaim)
		c.ResourceVersion = "1" + c.ResourceVersion
		writes = append(writes, c.DeepCopy())
		return false, nil, nil
	})
	return &writes
}

// A ready snapshot does not let its claim go while a sibling's content,
// not yet in the cache, is still being made: it reads it first.
func TestReleaseLooksForTheContentASiblingJustCreated(t *testing.T) {
	claim, pv, class, snap, next, ready, nextContent := releaseRace()
	client := fake.NewClientset(claim, pv)
	snaps := snapfake.NewSimpleClientset(class, snap, next, ready, nextContent)
	writes := claimWrites(client)
	// nextContent is in the API server only.
	syncOnce(t, client, snaps, record.NewFakeRecorder(10), claim, pv, class, snap, next, ready)
	if len(*writes) != 0 {
		t.Fatalf("claim written %d times (finalizers %v); want it kept for next", len(*writes), (*writes)[0].Finalizers)
	}
	// Without the sibling's content anywhere, the claim is let go.
	client = fake.NewClientset(claim, pv)
	snaps = snapfake.NewSimpleClientset(class, snap, next, ready)
	writes = claimWrites(client)
	syncOnce(t, client, snaps, record.NewFakeRecorder(10), claim, pv, class, snap, next, ready)
	if len(*writes) != 1 || hasString((*writes)[0].Finalizers, snapshotapi.ClaimFinalizer) {
		t.Fatalf("claim writes %v; want one release", *writes)
	}
}

// After a release, a new snapshot of the claim synced before the cache
// delivers the release does not trust the cached finalizer: it adds it
// again before creating its content.
func TestSnapshotAfterAReleaseProtectsTheClaimAgain(t *testing.T) {
	ctx := context.Background()
	claim, pv, class, snap, next, ready, _ := releaseRace()
	next.Status = nil
	client := fake.NewClientset(claim, pv)
	snaps := snapfake.NewSimpleClientset(class, snap, next, ready)
	writes := claimWrites(client)
	// The cache has snap and its ready content, not yet next.
	c := cachedOver(t, client, snaps, record.NewFakeRecorder(10), claim, pv, class, snap, ready)
	if _, err := c.syncSnapshot(ctx, "ns/snap"); err != nil {
		t.Fatal(err)
	}
	if len(*writes) != 1 {
		t.Fatalf("claim writes %d, want the release", len(*writes))
	}
	if err := c.byClaim.Add(next); err != nil {
		t.Fatal(err)
	}
	if _, err := c.syncSnapshot(ctx, "ns/next"); err != nil {
		t.Fatal(err)
	}
	if len(*writes) != 2 || !hasString((*writes)[1].Finalizers, snapshotapi.ClaimFinalizer) {
		t.Fatalf("claim writes %d; want the finalizer added back before next's content", len(*writes))
	}
	if _, err := snaps.SnapshotV1().VolumeSnapshotContents().Get(ctx, "snapcontent-u2", metav1.GetOptions{}); err != nil {
		t.Fatalf("next's content: %v", err)
	}
}

// A snapshot being deleted whose Delete content the cache has not seen yet
// (the soak, seed 987670, after an API server restart) deletes it before
// letting the snapshot go, instead of leaving it behind.
func TestDeletedSnapshotFindsTheContentTheCacheMissed(t *testing.T) {
	ctx := context.Background()
	claim, pv, class, snap, _, ready, _ := releaseRace()
	claim.Finalizers = nil
	snap.DeletionTimestamp = &metav1.Time{}
	ready.Annotations = map[string]string{snapshotapi.BeingDeleted: "yes"}
	client := fake.NewClientset(claim, pv)
	snaps := snapfake.NewSimpleClientset(class, snap, ready)
	// The content is in the API server only.
	syncOnce(t, client, snaps, record.NewFakeRecorder(10), claim, pv, class, snap)
	var verbs []string
	for _, a := range snaps.Actions() {
		if a.GetVerb() != "list" && a.GetVerb() != "watch" {
			verbs = append(verbs, a.GetVerb()+" "+a.GetResource().Resource)
		}
	}
	if _, err := snaps.SnapshotV1().VolumeSnapshotContents().Get(ctx, "snapcontent-u1", metav1.GetOptions{}); err == nil {
		t.Errorf("the content is still there after %v", verbs)
	}
}
