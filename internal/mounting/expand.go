package mounting

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/volplane/volplane/internal/expansion"
)

// ExpandMode is what a node expansion writes and calls.
type ExpandMode int

const (
	// ExpandAndFinish: mark the claim NodeResizeInProgress, call
	// NodeExpandVolume, then finish the claim (capacity, resize status and
	// conditions) in one write.
	ExpandAndFinish ExpandMode = iota
	// ExpandOnly: call NodeExpandVolume, write nothing: the claim already
	// says the new size (a ReadWriteMany volume another node expanded).
	ExpandOnly
	// FinishWithoutCall: the driver's node service cannot expand (no
	// EXPAND_VOLUME): finish the claim without a call.
	FinishWithoutCall
	// SkipReadOnly: the pod mounts the volume read-only; nothing grows, and
	// the pod and the claim get the kubelet's FileSystemResizeFailed event.
	SkipReadOnly
	// RecordOnly: the claim is expanded and this node has nothing to do;
	// only the node's record of the size moves on.
	RecordOnly
)

func (m ExpandMode) String() string {
	return [...]string{"ExpandAndFinish", "ExpandOnly", "FinishWithoutCall", "SkipReadOnly", "RecordOnly"}[m]
}

// Expansion is a node expansion of a published volume (the kubelet's
// NodeExpander).
type Expansion struct {
	Mode ExpandMode
	// Size is the volume's new size: the claim's allocated storage, or the
	// PV's capacity when the claim has none (see newSize).
	Size resource.Quantity
	// AtMount: the pod does not run yet, so the expansion is part of its
	// mount (the kubelet's expandVolumeDuringMount): a failure is a
	// FailedMount and keeps the pod from starting. Otherwise the pod runs
	// and a failure is a VolumeResizeFailed.
	AtMount bool
	// Block: a block volume, whose failure at mount has the kubelet's
	// MapVolume text.
	Block bool
}

// Why a volume whose PV grew is not expanded on the node: the set is
// closed, like the waits'.
const (
	// SizeUnknown: the PV has a capacity but the claim has none in its
	// status (and the node recorded none).
	SizeUnknown Reason = "SizeUnknown"
	// RefusedInUse: the driver refused to expand the volume to this size
	// while in use (FailedPrecondition); the next mount tries again.
	RefusedInUse Reason = "RefusedInUse"
	// ResizeNotPending: the claim's storage resize status is neither
	// NodeResizePending nor NodeResizeInProgress (the controller side has
	// not finished, or the node expansion failed as infeasible).
	ResizeNotPending Reason = "ResizeNotPending"
)

// expansion decides the node expansion of a volume published (or being
// published) for pod, given the size the node last expanded it to
// (node.Size, zero when unknown: the claim's capacity stands in for it),
// and a size it was refused while in use (node.RefusedInUse).
// It returns nil and no reason when the node already has the PV's size,
// and nil with a reason when the gate is closed. The rules are the
// kubelet's (runPreCheck): expand only while the claim's status is
// NodeResizePending or NodeResizeInProgress, or, for a ReadWriteMany claim
// another node finished, unless the resizer said no node needs to.
func (w World) expansion(pod *corev1.Pod, v *Volume, node Staged) (*Expansion, Reason) {
	pvSize := v.PV.Spec.Capacity[corev1.ResourceStorage]
	claimSize := v.Claim.Status.Capacity[corev1.ResourceStorage]
	nodeSize := node.Size
	if nodeSize.IsZero() {
		nodeSize = claimSize
	}
	switch {
	case pvSize.IsZero():
		return nil, ""
	case nodeSize.IsZero():
		return nil, SizeUnknown
	case pvSize.Cmp(nodeSize) <= 0:
		return nil, ""
	}
	drv, served := w.Drivers[v.Driver]
	if !served {
		return nil, DriverNotServed // nothing could expand it, and nothing may finish it in its place
	}
	status := v.Claim.Status.AllocatedResourceStatuses[corev1.ResourceStorage]
	e := &Expansion{Size: newSize(v.Claim, status, pvSize), AtMount: pod.Status.Phase != corev1.PodRunning, Block: v.Block}
	if !e.AtMount && node.RefusedInUse.Cmp(e.Size) == 0 {
		return nil, RefusedInUse
	}
	claimUpdated := claimSize.Cmp(e.Size) >= 0 && status == ""
	switch {
	case v.ReadOnly:
		e.Mode = SkipReadOnly
	case claimUpdated && (!expandEveryNode(v.Claim) || !drv.Expand):
		e.Mode = RecordOnly
	case claimUpdated:
		e.Mode = ExpandOnly
	case status != corev1.PersistentVolumeClaimNodeResizePending && status != corev1.PersistentVolumeClaimNodeResizeInProgress:
		return nil, ResizeNotPending
	case !drv.Expand:
		e.Mode = FinishWithoutCall
	default:
		e.Mode = ExpandAndFinish
	}
	return e, ""
}

// newSize is the size the kubelet expands the volume to on the node: the
// claim's allocated storage once the resizer records one (its recovery
// from expansion failures, always on since v1.34: a driver that rounded
// the PV up does not make the node expand past what the claim was
// allocated), else the PV's capacity.
func newSize(claim *corev1.PersistentVolumeClaim, status corev1.ClaimResourceStatus, pvSize resource.Quantity) resource.Quantity {
	allocated, ok := claim.Status.AllocatedResources[corev1.ResourceStorage]
	if (status != "" || claim.Status.AllocatedResources != nil) && ok && !allocated.IsZero() {
		return allocated
	}
	return pvSize
}

// expandEveryNode says whether every node using the claim's volume expands
// it even once the claim is expanded: a ReadWriteMany claim the resizer did
// not mark as needing no node expansion.
func expandEveryNode(claim *corev1.PersistentVolumeClaim) bool {
	_, notRequired := claim.Annotations[expansion.AnnNodeExpansionNotRequired]
	return slices.Contains(claim.Spec.AccessModes, corev1.ReadWriteMany) && !notRequired
}
