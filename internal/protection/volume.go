package protection

import v1 "k8s.io/api/core/v1"

// DecideVolume decides a pv-protection sync: a volume being deleted keeps
// its finalizer while it is Bound (the binder writes that phase), and loses
// it in any other phase. No pod or claim is looked at.
func DecideVolume(pv *v1.PersistentVolume) Decision {
	deleting := pv.DeletionTimestamp != nil
	switch {
	case needsFinalizer(deleting, pv.Finalizers, VolumeFinalizer):
		return Decision{Action: AddFinalizer, Reason: ReasonUnprotected}
	case !deleting:
		return Decision{Action: None, Reason: ReasonProtected}
	case !isDeletionCandidate(deleting, pv.Finalizers, VolumeFinalizer):
		return Decision{Action: None, Reason: ReasonFinalizerGone}
	case pv.Status.Phase == v1.VolumeBound:
		return Decision{Action: Keep, Reason: ReasonBound}
	}
	return Decision{Action: RemoveFinalizer, Reason: ReasonNotBound}
}
