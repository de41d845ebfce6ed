package binding

import v1 "k8s.io/api/core/v1"

// At rest: an object whose next change can only come from an event, so the
// binder's periodic resync need not revisit it. The reference re-queues
// every object every 15 s; at 100k volumes revisiting the ones at rest is
// pure cost.

// ClaimAtRest: bound, with nothing left to complete on the claim itself.
// Whether its PV still points back is the volume side's business, and a
// change there reaches the claim through the volume sync.
func ClaimAtRest(claim *v1.PersistentVolumeClaim) bool {
	return claim.Status.Phase == v1.ClaimBound && claim.Spec.VolumeName != "" && !IsWaiting(claim)
}

// VolumeAtRest: Bound, or Released/Failed under a policy that needs nothing
// more from us (Retain), or Available with nothing that could bind it.
func VolumeAtRest(pv *v1.PersistentVolume) bool {
	switch pv.Status.Phase {
	case v1.VolumeBound:
		return pv.Spec.ClaimRef != nil && pv.Spec.ClaimRef.UID != ""
	case v1.VolumeReleased:
		return pv.Spec.PersistentVolumeReclaimPolicy == v1.PersistentVolumeReclaimRetain
	case v1.VolumeFailed:
		return true
	case v1.VolumeAvailable:
		// Waiting claims are resynced themselves and search every free PV.
		return pv.Spec.ClaimRef == nil
	}
	return false
}
