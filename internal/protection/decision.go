package protection

import "fmt"

// The finalizers, as the API server's StorageObjectInUseProtection admission
// plugin adds them (pkg/volume/util/finalizer.go).
const (
	ClaimFinalizer  = "kubernetes.io/pvc-protection"
	VolumeFinalizer = "kubernetes.io/pv-protection"
)

// Action is what a sync must do.
type Action int

const (
	// None: the object is at rest.
	None Action = iota
	// AddFinalizer: the object is not being deleted and lacks the finalizer.
	AddFinalizer
	// RemoveFinalizer: the object is being deleted and nothing uses it.
	RemoveFinalizer
	// Keep: the object is being deleted but still in use; wait.
	Keep
	// ListPods: no pod in the informer cache uses the claim; the
	// namespace's pods must be listed live before the finalizer may go.
	ListPods
	// ListUsers: no PV or claim in the informer caches uses the
	// VolumeAttributesClass; they must be listed live before the
	// finalizer may go.
	ListUsers
)

func (a Action) String() string {
	return [...]string{"None", "AddFinalizer", "RemoveFinalizer", "Keep", "ListPods", "ListUsers"}[a]
}

// Reason says why. The set is closed; logs and tests use the same values.
type Reason string

const (
	// ReasonProtected: not being deleted, finalizer present.
	ReasonProtected Reason = "Protected"
	// ReasonUnprotected: not being deleted, finalizer missing.
	ReasonUnprotected Reason = "Unprotected"
	// ReasonFinalizerGone: being deleted, our finalizer already removed.
	ReasonFinalizerGone Reason = "FinalizerGone"
	// ReasonUsedByPod: a pod uses the claim (Decision.Pod names it).
	ReasonUsedByPod Reason = "UsedByPod"
	// ReasonNotInCache: no pod in the informer cache uses the claim (no PV
	// or claim, the VolumeAttributesClass).
	ReasonNotInCache Reason = "NotInCache"
	// ReasonUnused: no pod of a live list uses the claim (no PV or claim
	// of a live list, the VolumeAttributesClass).
	ReasonUnused Reason = "Unused"
	// ReasonUsedByVolume, ReasonUsedByClaim: a PV or a claim uses the
	// VolumeAttributesClass (Decision.User names it).
	ReasonUsedByVolume Reason = "UsedByVolume"
	ReasonUsedByClaim  Reason = "UsedByClaim"
	// ReasonBound: the volume is Bound.
	ReasonBound Reason = "Bound"
	// ReasonNotBound: the volume is in any phase but Bound.
	ReasonNotBound Reason = "NotBound"
)

// Decision is what a sync decided, and why.
type Decision struct {
	Action Action
	Reason Reason
	// Pod is "namespace/name" of the pod keeping a claim (ReasonUsedByPod).
	Pod string
	// Use says how that pod uses the claim.
	Use Use
	// User names the PV or the "namespace/name" of the claim keeping a
	// VolumeAttributesClass (ReasonUsedByVolume, ReasonUsedByClaim).
	User string
}

func (d Decision) String() string {
	switch d.Reason {
	case ReasonUsedByPod:
		return fmt.Sprintf("%s: %s (pod %s, %s)", d.Action, d.Reason, d.Pod, d.Use)
	case ReasonUsedByVolume, ReasonUsedByClaim:
		return fmt.Sprintf("%s: %s (%s)", d.Action, d.Reason, d.User)
	}
	return fmt.Sprintf("%s: %s", d.Action, d.Reason)
}

// isDeletionCandidate and needsFinalizer are protectionutil's predicates.
// finalizerStep is the start every protection decision shares: an object
// not being deleted gets finalizer f, or is protected if it has it; one
// being deleted without f has nothing left to do. done is false for an
// object being deleted that still holds f: whether it may go is the
// caller's to decide.
func finalizerStep(deleting bool, finalizers []string, f string) (d Decision, done bool) {
	switch {
	case needsFinalizer(deleting, finalizers, f):
		return Decision{Action: AddFinalizer, Reason: ReasonUnprotected}, true
	case !deleting:
		return Decision{Action: None, Reason: ReasonProtected}, true
	case !isDeletionCandidate(deleting, finalizers, f):
		return Decision{Action: None, Reason: ReasonFinalizerGone}, true
	}
	return Decision{}, false
}

// cachedThenLive is the rest of a decision on an object being deleted that
// still holds its finalizer: it is kept while a user of the informer
// caches (cached) uses it; else, until the live list was made (listed),
// that list is asked for (action list); it is kept while a user of the
// live list (live) uses it; else the finalizer goes.
func cachedThenLive(cached, live func() (Decision, bool), listed bool, list Action) Decision {
	if d, ok := cached(); ok {
		return d
	}
	if !listed {
		return Decision{Action: list, Reason: ReasonNotInCache}
	}
	if d, ok := live(); ok {
		return d
	}
	return Decision{Action: RemoveFinalizer, Reason: ReasonUnused}
}

func isDeletionCandidate(deleting bool, finalizers []string, f string) bool {
	return deleting && has(finalizers, f)
}

func needsFinalizer(deleting bool, finalizers []string, f string) bool {
	return !deleting && !has(finalizers, f)
}

func has(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
