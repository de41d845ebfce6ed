package binding

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	storagehelpers "k8s.io/component-helpers/storage/volume"
)

// decideRequestedVolume handles an unbound claim that names its volume in
// spec.volumeName (the user pre-bound it, or a bind stopped half-way).
func decideRequestedVolume(in ClaimInput) ClaimDecision {
	claim, pv := in.Claim, in.Volume
	switch {
	case pv == nil:
		return ClaimDecision{Action: ClaimPending, Note: "the requested volume does not exist (yet)"}
	case pv.Spec.ClaimRef == nil:
		if reason := CheckRequested(claim, pv); reason != ReasonNone {
			return ClaimDecision{Action: ClaimPending, Note: "the requested volume does not fit: " + reason.Message(),
				Events: []Event{claimEvent(v1.EventTypeWarning, EventVolumeMismatch, MsgVolumeMismatch(pv.Name, reason), true)}}
		}
		return ClaimDecision{Action: ClaimBind, Volume: pv, Note: "binding the requested volume"}
	case IsBoundToClaim(pv, claim):
		return ClaimDecision{Action: ClaimBind, Volume: pv, Note: "the requested volume points at the claim: finishing the bind"}
	}
	event := claimEvent(v1.EventTypeWarning, EventFailedBinding, MsgAlreadyBound(pv.Name), true)
	if !metav1.HasAnnotation(claim.ObjectMeta, storagehelpers.AnnBoundByController) {
		return ClaimDecision{Action: ClaimPending, Events: []Event{event},
			Note: "the requested volume is bound to another claim; waiting for it to be freed"}
	}
	// The controller set volumeName and someone removed bind-completed: the
	// reference returns an error and retries in a tight loop. Nothing a retry
	// can fix, so report it and wait for either object to change.
	return ClaimDecision{Action: ClaimNone, Events: []Event{event},
		Note: "claim bound by the controller to a volume that belongs to another claim"}
}

// decideBoundClaim keeps a claim that completed binding consistent with its
// volume, or declares it Lost. Whatever the claim's phase: a Lost claim keeps
// bind-completed and its volumeName, so when its volume comes back pointing
// at it (or at no claim) it is bound again, as the reference's
// syncBoundClaim does. No event marks the return, as in the reference.
func decideBoundClaim(in ClaimInput) ClaimDecision {
	claim, pv := in.Claim, in.Volume
	switch {
	case claim.Spec.VolumeName == "":
		return lost(claim, EventClaimLost, MsgClaimLostReference, "the bound claim lost its volumeName")
	case pv == nil:
		return lost(claim, EventClaimLost, MsgClaimLostVolume, "the bound claim's volume is gone")
	case pv.Spec.ClaimRef == nil:
		return decideUnboundVolume(claim, pv)
	case pv.Spec.ClaimRef.UID == claim.UID:
		return ClaimDecision{Action: ClaimBind, Volume: pv, Note: "keeping the bind complete"}
	}
	return lost(claim, EventClaimMisbound, MsgClaimMisbound, "the claim's volume points at another claim")
}

// decideUnboundVolume: the claim says it completed a bind but its volume
// has no claimRef: a stale copy of the volume, or an administrator who
// cleared the claimRef. Both are repaired by binding again, as the
// reference does. But bind-completed is a record of ours on an object its
// owner writes: a claim created with it and a spec.volumeName would take any
// free volume, of any class, size or mode. A claim the binder has bound
// says so in its status (phase Bound or Lost), which its owner cannot write
// and the API server resets on create; any other must fit the volume as a
// pre-bound claim must (CheckRequested).
func decideUnboundVolume(claim *v1.PersistentVolumeClaim, pv *v1.PersistentVolume) ClaimDecision {
	boundOnce := claim.Status.Phase == v1.ClaimBound || claim.Status.Phase == v1.ClaimLost
	if reason := CheckRequested(claim, pv); !boundOnce && reason != ReasonNone {
		return ClaimDecision{Action: ClaimNone, Note: "bind-completed on a claim never bound, and the requested volume does not fit: " + reason.Message(),
			Events: []Event{claimEvent(v1.EventTypeWarning, EventVolumeMismatch, MsgVolumeMismatch(pv.Name, reason), true)}}
	}
	return ClaimDecision{Action: ClaimBind, Volume: pv, Note: "keeping the bind complete"}
}

// lost emits its event only when the phase changes, as the reference does.
func lost(claim *v1.PersistentVolumeClaim, reason, message, note string) ClaimDecision {
	d := ClaimDecision{Action: ClaimLost, Note: note}
	if claim.Status.Phase != v1.ClaimLost {
		d.Events = []Event{claimEvent(v1.EventTypeWarning, reason, message, false)}
	}
	return d
}

// CheckRequested checks a free PV the claim names by spec.volumeName, in the
// reference's order: deletion, size, class, attributes class, volume mode,
// access modes. The selector and the phase do not matter: the user chose it.
func CheckRequested(claim *v1.PersistentVolumeClaim, pv *v1.PersistentVolume) Reason {
	capacity := wholeBytes(Capacity(pv))
	switch {
	case pv.DeletionTimestamp != nil:
		return ReasonBeingDeleted
	case capacity.Cmp(wholeBytes(claim.Spec.Resources.Requests[v1.ResourceStorage])) < 0:
		return ReasonTooSmall
	case VolumeClass(pv) != ClaimClass(claim):
		return ReasonClassMismatch
	case VolumeAttributesClass(pv) != claimAttributesClass(claim):
		return ReasonAttributesClassMismatch
	case VolumeMode(pv) != claimVolumeMode(claim):
		return ReasonVolumeModeMismatch
	case !offersModes(pv.Spec.AccessModes, claim.Spec.AccessModes):
		return ReasonAccessModes
	}
	return ReasonNone
}

// wholeBytes is q rounded up to whole bytes: the reference compares sizes
// as Value(), which rounds up the same way but wraps past int64 (a request
// of 1E30 or 2^64+1Gi bytes would fit a 1Gi volume); Cmp does not wrap.
func wholeBytes(q resource.Quantity) resource.Quantity {
	q = q.DeepCopy()
	q.RoundUp(0)
	return q
}

// offersModes compares the raw mode strings, as the reference does here.
func offersModes(offered, wanted []v1.PersistentVolumeAccessMode) bool {
	for _, w := range wanted {
		found := false
		for _, o := range offered {
			found = found || o == w
		}
		if !found {
			return false
		}
	}
	return true
}
