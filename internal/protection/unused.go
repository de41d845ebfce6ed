package protection

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/storage/ephemeral"

	"github.com/volplane/volplane/internal/binding"
)

// The claim condition Unused (KEP-5541, gate
// PersistentVolumeClaimUnusedSinceTime): its reasons and messages, as
// kube-controller-manager v1.37 writes them
// (pkg/controller/volume/pvcprotection, updateUnusedCondition).
const (
	UnusedReasonInUse   = "PodUsingPVC"
	UnusedReasonUnused  = "NoPodsUsingPVC"
	UnusedMessageInUse  = "A pod is currently referencing this PVC"
	UnusedMessageUnused = "No pods are currently referencing this PVC"
)

// PodReferences says whether the pod counts as using the claim for its
// Unused condition (the reference's podUsesPVCForUnusedSince): a pod that
// has not terminated and names the claim, scheduled or not, by claimName
// or through a generic ephemeral volume whose claim it controls. A pod of
// another namespace never counts.
func PodReferences(pod *v1.Pod, claim *v1.PersistentVolumeClaim) bool {
	if pod.Namespace != claim.Namespace || binding.PodTerminated(pod) {
		return false
	}
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		if vol.PersistentVolumeClaim != nil && vol.PersistentVolumeClaim.ClaimName == claim.Name {
			return true
		}
		if vol.Ephemeral != nil && ephemeral.VolumeClaimName(pod, vol) == claim.Name && ephemeral.VolumeIsForPod(pod, claim) == nil {
			return true
		}
	}
	return false
}

// UnusedTracked says whether pvc-protection keeps the claim's Unused
// condition: the gate is on, the claim is not being deleted, and it is
// Bound (v1.37 leaves claims the binder is still working on alone).
func UnusedTracked(gateOn bool, claim *v1.PersistentVolumeClaim) bool {
	return gateOn && claim.DeletionTimestamp == nil && claim.Status.Phase == v1.ClaimBound
}

// UnusedAction is what the Unused condition needs.
type UnusedAction int

const (
	// UnusedAtRest: the condition says what is true, or is not kept.
	UnusedAtRest UnusedAction = iota
	// UnusedListPods: no cached pod references the claim; the namespace's
	// pods must be listed live first.
	UnusedListPods
	// UnusedWrite: Condition must be written.
	UnusedWrite
)

// UnusedDecision is what the Unused condition needs, and the condition to
// write (UnusedWrite).
type UnusedDecision struct {
	Action    UnusedAction
	Condition v1.PersistentVolumeClaimCondition
}

// DecideUnused decides a tracked claim's Unused condition from the cached
// pods that name it and, once listed, the namespace's live pods: a claim a
// pod references gets Unused=False unless it has that already; a claim
// none references gets Unused=True unless it has that already. A change
// sets lastTransitionTime to now; the reference also writes now when the
// condition is first set.
func DecideUnused(f ClaimFacts, now metav1.Time) UnusedDecision {
	used := referenced(f.Cached, f.Claim)
	if !used && !f.Listed {
		return UnusedDecision{Action: UnusedListPods}
	}
	used = used || referenced(f.Live, f.Claim)
	existing := UnusedCondition(f.Claim)
	switch {
	case used && (existing == nil || existing.Status == v1.ConditionTrue):
		return UnusedDecision{Action: UnusedWrite, Condition: unused(v1.ConditionFalse, UnusedReasonInUse, UnusedMessageInUse, now)}
	case !used && (existing == nil || existing.Status != v1.ConditionTrue):
		return UnusedDecision{Action: UnusedWrite, Condition: unused(v1.ConditionTrue, UnusedReasonUnused, UnusedMessageUnused, now)}
	}
	return UnusedDecision{Action: UnusedAtRest}
}

func referenced(pods []*v1.Pod, claim *v1.PersistentVolumeClaim) bool {
	for _, p := range pods {
		if PodReferences(p, claim) {
			return true
		}
	}
	return false
}

func unused(status v1.ConditionStatus, reason, message string, now metav1.Time) v1.PersistentVolumeClaimCondition {
	return v1.PersistentVolumeClaimCondition{Type: v1.PersistentVolumeClaimUnused, Status: status,
		LastTransitionTime: now, Reason: reason, Message: message}
}

// UnusedCondition is the claim's Unused condition, nil without one.
func UnusedCondition(claim *v1.PersistentVolumeClaim) *v1.PersistentVolumeClaimCondition {
	for i := range claim.Status.Conditions {
		if claim.Status.Conditions[i].Type == v1.PersistentVolumeClaimUnused {
			return &claim.Status.Conditions[i]
		}
	}
	return nil
}

// WithUnused is a copy of the claim whose Unused condition is c, replaced
// in place or appended.
func WithUnused(claim *v1.PersistentVolumeClaim, c v1.PersistentVolumeClaimCondition) *v1.PersistentVolumeClaim {
	out := claim.DeepCopy()
	if existing := UnusedCondition(out); existing != nil {
		*existing = c
	} else {
		out.Status.Conditions = append(out.Status.Conditions, c)
	}
	return out
}
