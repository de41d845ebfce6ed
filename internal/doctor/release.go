package doctor

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
)

// Refusal is why `volplane release pv` will not clear a volume's claimRef.
// The set is closed.
type Refusal string

const (
	RefuseNotFound     Refusal = "not-found"
	RefuseBeingDeleted Refusal = "being-deleted"
	RefuseNotRetain    Refusal = "not-retain"
	RefuseNotReleased  Refusal = "not-released"
	RefuseNoClaimRef   Refusal = "no-claim-ref"
	RefuseClaimExists  Refusal = "claim-exists"
)

// ReleaseDecision is whether a volume may be released and why.
type ReleaseDecision struct {
	// Refusal is "" when the release may go ahead.
	Refusal Refusal
	// Reason is a sentence for people: why not, or what the release does.
	Reason string
}

// DecideRelease decides whether the volume name (pv, nil when it does not
// exist) may have its claimRef cleared. claim is the claim of the
// claimRef's namespace and name as read live (nil when there is none):
// only a claim with the claimRef's UID holds the volume; one of the same
// name and another UID is a new claim, and the release goes ahead.
func DecideRelease(name string, pv *v1.PersistentVolume, claim *v1.PersistentVolumeClaim) ReleaseDecision {
	refuse := func(r Refusal, format string, args ...any) ReleaseDecision {
		return ReleaseDecision{Refusal: r, Reason: fmt.Sprintf("persistentvolume %s: ", name) + fmt.Sprintf(format, args...)}
	}
	if pv == nil {
		return refuse(RefuseNotFound, "not found")
	}
	ref := pv.Spec.ClaimRef
	switch {
	case pv.DeletionTimestamp != nil:
		return refuse(RefuseBeingDeleted, "it is being deleted")
	case pv.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimRetain:
		return refuse(RefuseNotRetain, "its reclaim policy is %s, not Retain: the reclaim loop, not a person, frees it", pv.Spec.PersistentVolumeReclaimPolicy)
	case pv.Status.Phase != v1.VolumeReleased:
		return refuse(RefuseNotReleased, "it is %s, not Released", phaseOf(pv))
	case ref == nil:
		return refuse(RefuseNoClaimRef, "it has no claimRef to clear")
	case claim != nil && (ref.UID == "" || claim.UID == ref.UID):
		return refuse(RefuseClaimExists, "its claim %s/%s still exists; delete the claim first, or use it", ref.Namespace, ref.Name)
	}
	why := fmt.Sprintf("claim %s/%s (uid %s) is gone", ref.Namespace, ref.Name, ref.UID)
	if claim != nil {
		why = fmt.Sprintf("claim %s/%s (uid %s) is gone; the claim of that name now is a new one (uid %s), which this does not bind",
			ref.Namespace, ref.Name, ref.UID, claim.UID)
	}
	return ReleaseDecision{Reason: why}
}

func phaseOf(pv *v1.PersistentVolume) v1.PersistentVolumePhase {
	if pv.Status.Phase == "" {
		return v1.VolumePending
	}
	return pv.Status.Phase
}

// Released is a copy of pv without its claimRef: what release writes.
func Released(pv *v1.PersistentVolume) *v1.PersistentVolume {
	out := pv.DeepCopy()
	out.Spec.ClaimRef = nil
	return out
}
