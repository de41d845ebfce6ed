package expansion

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AnnNodeExpansionNotRequired on a claim tells the node that the volume
// needs no node expansion (set once an expansion finished on the
// controller alone, dropped when another one starts).
const AnnNodeExpansionNotRequired = "volume.kubernetes.io/node-expansion-not-required"

// The steps below never modify their arguments (they may come from an
// informer cache). Each returns a changed deep copy, or nil when the claim
// already has the wanted state. A condition that is already there with the
// same status and message is kept as it is (with its transition time), so
// a repeated step is nil. now is the transition time of new conditions.

// resizeConditions are the condition types the steps own.
var resizeConditions = map[v1.PersistentVolumeClaimConditionType]bool{
	v1.PersistentVolumeClaimResizing:                true,
	v1.PersistentVolumeClaimFileSystemResizePending: true,
	v1.PersistentVolumeClaimControllerResizeError:   true,
	v1.PersistentVolumeClaimNodeResizeError:         true,
}

// MarkControllerResizeInProgress is the first write of an expansion to
// size: condition Resizing=True, status ControllerResizeInProgress,
// allocatedResources = size, annotation node-expansion-not-required gone.
// When size is already the allocated size (a retry of the same
// expansion), the resize status and the other resize conditions are left
// as they are: an infeasible or failed mark stays until the retry answers.
func MarkControllerResizeInProgress(claim *v1.PersistentVolumeClaim, size resource.Quantity, now metav1.Time) *v1.PersistentVolumeClaim {
	retry := sameQuantity(claim.Status.AllocatedResources, size)
	out := claim.DeepCopy()
	out.Status.Conditions = mergeConditions(claim.Status.Conditions, retry, condition(v1.PersistentVolumeClaimResizing, "", now))
	delete(out.Annotations, AnnNodeExpansionNotRequired)
	if !retry {
		setResizeStatus(out, v1.PersistentVolumeClaimControllerResizeInProgress)
		if out.Status.AllocatedResources == nil {
			out.Status.AllocatedResources = v1.ResourceList{}
		}
		out.Status.AllocatedResources[v1.ResourceStorage] = size
	}
	return changed(claim, out)
}

// MarkNodeResizePending follows a controller expansion after which the
// node must expand the volume: condition FileSystemResizePending=True
// (other resize conditions kept), status NodeResizePending.
func MarkNodeResizePending(claim *v1.PersistentVolumeClaim, now metav1.Time) *v1.PersistentVolumeClaim {
	out := claim.DeepCopy()
	pending := condition(v1.PersistentVolumeClaimFileSystemResizePending, MessageNodeResizePending, now)
	out.Status.Conditions = mergeConditions(claim.Status.Conditions, true, pending)
	delete(out.Annotations, AnnNodeExpansionNotRequired)
	setResizeStatus(out, v1.PersistentVolumeClaimNodeResizePending)
	return changed(claim, out)
}

// MarkResizeFinished ends an expansion that needs no node expansion:
// status.capacity = capacity, every resize condition and the resize status
// gone, annotation node-expansion-not-required "true".
func MarkResizeFinished(claim *v1.PersistentVolumeClaim, capacity resource.Quantity) *v1.PersistentVolumeClaim {
	out := finished(claim, capacity)
	metav1.SetMetaDataAnnotation(&out.ObjectMeta, AnnNodeExpansionNotRequired, "true")
	return changed(claim, out)
}

// MarkControllerResizeFailed records a final ControllerExpandVolume error:
// condition ControllerResizeError "failed to expand pvc with <err>" (other
// resize conditions kept), and when infeasible (csierror.ExpandInfeasible) status
// ControllerResizeInfeasible; otherwise the status stays in progress.
func MarkControllerResizeFailed(claim *v1.PersistentVolumeClaim, err error, infeasible bool, now metav1.Time) *v1.PersistentVolumeClaim {
	return failed(claim, v1.PersistentVolumeClaimControllerResizeError, v1.PersistentVolumeClaimControllerResizeInfeasible, err, infeasible, now)
}

// MarkNodeResizeInProgress is the node's first write: status
// NodeResizeInProgress.
func MarkNodeResizeInProgress(claim *v1.PersistentVolumeClaim) *v1.PersistentVolumeClaim {
	out := claim.DeepCopy()
	setResizeStatus(out, v1.PersistentVolumeClaimNodeResizeInProgress)
	return changed(claim, out)
}

// MarkNodeResizeFinished ends an expansion on the node: status.capacity =
// capacity, every resize condition and the resize status gone.
func MarkNodeResizeFinished(claim *v1.PersistentVolumeClaim, capacity resource.Quantity) *v1.PersistentVolumeClaim {
	return changed(claim, finished(claim, capacity))
}

// MarkNodeResizeFailed records a failed NodeExpandVolume: condition
// NodeResizeError "failed to expand pvc with <err>" (other resize
// conditions kept), and when infeasible status NodeResizeInfeasible.
func MarkNodeResizeFailed(claim *v1.PersistentVolumeClaim, err error, infeasible bool, now metav1.Time) *v1.PersistentVolumeClaim {
	return failed(claim, v1.PersistentVolumeClaimNodeResizeError, v1.PersistentVolumeClaimNodeResizeInfeasible, err, infeasible, now)
}

func failed(claim *v1.PersistentVolumeClaim, typ v1.PersistentVolumeClaimConditionType, infeasibleStatus v1.ClaimResourceStatus,
	err error, infeasible bool, now metav1.Time) *v1.PersistentVolumeClaim {
	out := claim.DeepCopy()
	out.Status.Conditions = mergeConditions(claim.Status.Conditions, true, condition(typ, conditionMessage(err), now))
	if infeasible {
		setResizeStatus(out, infeasibleStatus)
	}
	return changed(claim, out)
}

// finished is the claim with capacity set and every trace of the
// expansion gone (allocatedResources stays: it is what was asked for, and
// quota charges it).
func finished(claim *v1.PersistentVolumeClaim, capacity resource.Quantity) *v1.PersistentVolumeClaim {
	out := claim.DeepCopy()
	if out.Status.Capacity == nil {
		out.Status.Capacity = v1.ResourceList{}
	}
	out.Status.Capacity[v1.ResourceStorage] = capacity
	out.Status.Conditions = mergeConditions(claim.Status.Conditions, false)
	delete(out.Status.AllocatedResourceStatuses, v1.ResourceStorage)
	if len(out.Status.AllocatedResourceStatuses) == 0 {
		out.Status.AllocatedResourceStatuses = nil
	}
	return out
}

// ResizeStatus is the claim's resize status for storage ("" if none).
func ResizeStatus(claim *v1.PersistentVolumeClaim) v1.ClaimResourceStatus {
	return claim.Status.AllocatedResourceStatuses[v1.ResourceStorage]
}

func setResizeStatus(claim *v1.PersistentVolumeClaim, s v1.ClaimResourceStatus) {
	if claim.Status.AllocatedResourceStatuses == nil {
		claim.Status.AllocatedResourceStatuses = map[v1.ResourceName]v1.ClaimResourceStatus{}
	}
	claim.Status.AllocatedResourceStatuses[v1.ResourceStorage] = s
}

func condition(typ v1.PersistentVolumeClaimConditionType, msg string, now metav1.Time) v1.PersistentVolumeClaimCondition {
	return v1.PersistentVolumeClaimCondition{Type: typ, Status: v1.ConditionTrue, Message: msg, LastTransitionTime: now}
}

// mergeConditions keeps every condition that is not a resize condition,
// the old resize conditions when keepOld, and sets each of add: an old
// condition of the same type, status, reason and message stays as it was.
func mergeConditions(old []v1.PersistentVolumeClaimCondition, keepOld bool, add ...v1.PersistentVolumeClaimCondition) []v1.PersistentVolumeClaimCondition {
	var out []v1.PersistentVolumeClaimCondition
	pending := map[v1.PersistentVolumeClaimConditionType]v1.PersistentVolumeClaimCondition{}
	for _, c := range add {
		pending[c.Type] = c
	}
	for _, c := range old {
		n, replaced := pending[c.Type]
		switch {
		case !resizeConditions[c.Type]:
			out = append(out, c)
		case replaced && sameCondition(c, n):
			out = append(out, c)
			delete(pending, c.Type)
		case replaced:
			out = append(out, n)
			delete(pending, c.Type)
		case keepOld:
			out = append(out, c)
		}
	}
	for _, c := range add {
		if _, ok := pending[c.Type]; ok {
			out = append(out, c)
		}
	}
	return out
}

func sameCondition(a, b v1.PersistentVolumeClaimCondition) bool {
	return a.Status == b.Status && a.Reason == b.Reason && a.Message == b.Message
}

func sameQuantity(list v1.ResourceList, q resource.Quantity) bool {
	have, ok := list[v1.ResourceStorage]
	return ok && have.Cmp(q) == 0
}
