package snapshot

import (
	"context"
	"testing"

	snapfake "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned/fake"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/snapshotapi"
)

// A snapshot deleted just after a claim that restores from it was made,
// before the cache saw the claim, is kept for it: its as-source finalizer
// stays and its content is not deleted (the CI flake of
// TestSnapshotKeptWhileAPendingClaimRestoresFromIt: the loop let it go on
// its cache alone).
func TestDeletedSnapshotLooksForRestoringClaimsLive(t *testing.T) {
	ctx := context.Background()
	_, vs, content := deletedMember()
	vs.OwnerReferences, vs.Status.VolumeGroupSnapshotName = nil, nil
	vs.Finalizers = []string{snapshotapi.AsSourceFinalizer, snapshotapi.BoundFinalizer}
	content.Annotations, content.Status.VolumeGroupSnapshotHandle = nil, nil
	content.Name = snapshotapi.ContentName(vs.UID)
	vs.Status.BoundVolumeSnapshotContentName = ptr.To(content.Name)
	restoring := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "restored"},
		Spec: corev1.PersistentVolumeClaimSpec{DataSource: &corev1.TypedLocalObjectReference{
			APIGroup: ptr.To(snapshotapi.Group), Kind: snapshotapi.KindSnapshot, Name: "snap"}},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending}}
	snaps := snapfake.NewSimpleClientset(vs, content)
	syncWith(t, fake.NewClientset(restoring), snaps, vs, content)
	got, err := snaps.SnapshotV1().VolumeSnapshots("ns").Get(ctx, "snap", metav1.GetOptions{})
	if err != nil || !hasString(got.Finalizers, snapshotapi.AsSourceFinalizer) {
		t.Fatalf("snapshot let go under a claim restoring from it: %v %v", err, got)
	}
	c, err := snaps.SnapshotV1().VolumeSnapshotContents().Get(ctx, content.Name, metav1.GetOptions{})
	if err != nil || c.DeletionTimestamp != nil {
		t.Fatalf("content deleted under a claim restoring from its snapshot: %v %v", err, c)
	}
}
