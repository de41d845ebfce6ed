package protection

import v1 "k8s.io/api/core/v1"

// DecideVolume decides a pv-protection sync: a volume being deleted keeps
// its finalizer while it is Bound (the binder writes that phase), and loses
// it in any other phase. No pod or claim is looked at.
func DecideVolume(pv *v1.PersistentVolume) Decision {
	if d, done := finalizerStep(pv.DeletionTimestamp != nil, pv.Finalizers, VolumeFinalizer); done {
		return d
	}
	if pv.Status.Phase == v1.VolumeBound {
		return Decision{Action: Keep, Reason: ReasonBound}
	}
	return Decision{Action: RemoveFinalizer, Reason: ReasonNotBound}
}
