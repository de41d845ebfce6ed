package snapshotbinding

import (
	"slices"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/snapshotapi"
)

// Holds says a snapshot holds its source claim (the claim keeps
// snapshot.storage.kubernetes.io/pvc-as-source-protection): a dynamic
// snapshot, not a group member, not being deleted, not ready, whose
// content exists, points back at it and is still being made: no error,
// or a CreateSnapshot call in flight (the sidecar's being-created
// annotation).
//
// The reference holds the claim for every snapshot of it that is not
// ready (isPVCBeingUsed), including one that never got a content or whose
// every CreateSnapshot failed: a broken snapshot then holds its claim
// until the snapshot is deleted (external-snapshotter #1305). Here a
// snapshot that cannot be made (no class, claim unbound, content refused)
// never takes the claim, and a failed one lets it go until the sidecar
// tries again.
func Holds(s *snapv1.VolumeSnapshot, c *snapv1.VolumeSnapshotContent) bool {
	if c == nil || !MayHold(s) {
		return false
	}
	if !PointsBack(s, c) || c.Name != snapshotapi.ContentName(s.UID) {
		return false
	}
	if c.Status != nil && ptr.Deref(c.Status.ReadyToUse, false) {
		return false
	}
	if c.Status != nil && c.Status.Error != nil {
		_, creating := c.Annotations[snapshotapi.BeingCreated]
		return creating
	}
	return true
}

// MayHold says a snapshot holds its claim once its content is seen (Holds
// with a content that points back and is still being made): a dynamic
// snapshot, not a group member, not being deleted, not ready. A cache may
// not have seen the content such a snapshot has just created; whoever
// releases the claim must look for it first.
func MayHold(s *snapv1.VolumeSnapshot) bool {
	if s == nil || s.DeletionTimestamp != nil || !Dynamic(s) || member(s) {
		return false
	}
	return s.Status == nil || !ptr.Deref(s.Status.ReadyToUse, false)
}

// claimStep is what happens to the source claim's finalizer after the
// plan p for the snapshot: added before its content is created (refused
// while the claim is being deleted, decided above), kept while any
// snapshot of the namespace holds the claim, removed once none does.
func claimStep(f SnapshotFacts, p Plan) ClaimStep {
	s, claim := f.Snapshot, f.Claim
	if claim == nil || s.Spec.Source.PersistentVolumeClaimName == nil || claim.Name != *s.Spec.Source.PersistentVolumeClaimName || claim.Namespace != s.Namespace {
		return ClaimKeep
	}
	held := p.Create != nil || Holds(s, f.Content)
	for _, sib := range f.Siblings {
		if sib.Snapshot != nil && sib.Snapshot.UID != s.UID && sib.Snapshot.Namespace == s.Namespace &&
			ptr.Deref(sib.Snapshot.Spec.Source.PersistentVolumeClaimName, "") == claim.Name && Holds(sib.Snapshot, sib.Content) {
			held = true
		}
	}
	has := slices.Contains(claim.Finalizers, snapshotapi.ClaimFinalizer)
	switch {
	case has && !held:
		return ClaimRemoveFinalizer
	case !has && held && claim.DeletionTimestamp == nil:
		return ClaimAddFinalizer
	}
	return ClaimKeep
}
