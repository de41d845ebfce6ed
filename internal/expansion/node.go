package expansion

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The claim status steps of node expansion, the kubelet's part of a
// resize. Each returns a changed copy of the claim, or nil when the claim
// already says so (nothing to write). The claim passed in is never
// modified: it may come from an informer cache.

// resizeConditions are the claim conditions a resize sets; a finished
// node expansion clears them all (the reference's known resize
// conditions).
var resizeConditions = []corev1.PersistentVolumeClaimConditionType{
	corev1.PersistentVolumeClaimResizing,
	corev1.PersistentVolumeClaimFileSystemResizePending,
	corev1.PersistentVolumeClaimControllerResizeError,
	corev1.PersistentVolumeClaimNodeResizeError,
}

// MarkNodeResizeInProgress records that the node is expanding the claim's
// volume: allocatedResourceStatuses[storage] = NodeResizeInProgress.
func MarkNodeResizeInProgress(claim *corev1.PersistentVolumeClaim) *corev1.PersistentVolumeClaim {
	if resizeStatus(claim) == corev1.PersistentVolumeClaimNodeResizeInProgress {
		return nil
	}
	out := claim.DeepCopy()
	setResizeStatus(out, corev1.PersistentVolumeClaimNodeResizeInProgress)
	return out
}

// MarkNodeResizeFinished records a finished expansion to size: the claim's
// status.capacity becomes size, its storage resize status goes, and so do
// the resize conditions.
func MarkNodeResizeFinished(claim *corev1.PersistentVolumeClaim, size resource.Quantity) *corev1.PersistentVolumeClaim {
	capacity, hasCapacity := claim.Status.Capacity[corev1.ResourceStorage]
	_, hasStatus := claim.Status.AllocatedResourceStatuses[corev1.ResourceStorage]
	if hasCapacity && capacity.Cmp(size) == 0 && !hasStatus && !hasResizeCondition(claim) {
		return nil
	}
	out := claim.DeepCopy()
	if out.Status.Capacity == nil {
		out.Status.Capacity = corev1.ResourceList{}
	}
	out.Status.Capacity[corev1.ResourceStorage] = size
	delete(out.Status.AllocatedResourceStatuses, corev1.ResourceStorage)
	if len(out.Status.AllocatedResourceStatuses) == 0 {
		out.Status.AllocatedResourceStatuses = nil
	}
	out.Status.Conditions = slices.DeleteFunc(out.Status.Conditions, func(c corev1.PersistentVolumeClaimCondition) bool {
		return slices.Contains(resizeConditions, c.Type)
	})
	return out
}

// MarkNodeResizeFailed records a node expansion the driver refused with a
// final error: the condition NodeResizeError "failed to expand pvc with
// <err>" and, when retrying the same size cannot help (infeasible), the
// status NodeResizeInfeasible, which closes the node's gate until the
// controller side resizes again. Other resize conditions stay. now stamps a
// condition that changes.
func MarkNodeResizeFailed(claim *corev1.PersistentVolumeClaim, err error, infeasible bool, now metav1.Time) *corev1.PersistentVolumeClaim {
	cond := corev1.PersistentVolumeClaimCondition{Type: corev1.PersistentVolumeClaimNodeResizeError,
		Status: corev1.ConditionTrue, LastTransitionTime: now, Message: fmt.Sprintf("failed to expand pvc with %v", err)}
	i := slices.IndexFunc(claim.Status.Conditions, func(c corev1.PersistentVolumeClaimCondition) bool { return c.Type == cond.Type })
	sameCondition := i >= 0 && claim.Status.Conditions[i].Status == cond.Status && claim.Status.Conditions[i].Message == cond.Message
	sameStatus := !infeasible || resizeStatus(claim) == corev1.PersistentVolumeClaimNodeResizeInfeasible
	if sameCondition && sameStatus {
		return nil
	}
	out := claim.DeepCopy()
	if infeasible {
		setResizeStatus(out, corev1.PersistentVolumeClaimNodeResizeInfeasible)
	}
	if i >= 0 {
		out.Status.Conditions[i] = cond
	} else {
		out.Status.Conditions = append(out.Status.Conditions, cond)
	}
	return out
}

func resizeStatus(claim *corev1.PersistentVolumeClaim) corev1.ClaimResourceStatus {
	return claim.Status.AllocatedResourceStatuses[corev1.ResourceStorage]
}

// setResizeStatus sets the storage resize status of a copy (its map is
// cloned first: DeepCopy already did, but a nil map needs making).
func setResizeStatus(claim *corev1.PersistentVolumeClaim, s corev1.ClaimResourceStatus) {
	m := maps.Clone(claim.Status.AllocatedResourceStatuses)
	if m == nil {
		m = map[corev1.ResourceName]corev1.ClaimResourceStatus{}
	}
	m[corev1.ResourceStorage] = s
	claim.Status.AllocatedResourceStatuses = m
}

func hasResizeCondition(claim *corev1.PersistentVolumeClaim) bool {
	return slices.ContainsFunc(claim.Status.Conditions, func(c corev1.PersistentVolumeClaimCondition) bool {
		return slices.Contains(resizeConditions, c.Type)
	})
}
