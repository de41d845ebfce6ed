package mounting

import (
	"fmt"

	"github.com/volplane/volplane/internal/csierror"
)

// Op is one operation of a volume's step, in the order the agent carries
// them out; the first that fails ends the step.
type Op int

const (
	// OpStage: the kubelet's MountDevice (record, NodeStageVolume if the
	// driver stages, record done).
	OpStage Op = iota
	// OpPublish: the kubelet's SetUp (record, NodePublishVolume, record done).
	OpPublish
	// OpExpand: the step's node expansion (Step.Expand), carried out as
	// Expansion.Ops says.
	OpExpand
)

func (o Op) String() string { return [...]string{"Stage", "Publish", "Expand"}[o] }

// Ops lists what the agent does for the step: stage then publish then the
// expansion its mount includes; publish and the expansion; the online
// expansion of a published volume; nothing for a wait or a volume done.
func (s Step) Ops() []Op {
	var ops []Op
	switch s.Action {
	case Stage:
		ops = append(ops, OpStage, OpPublish)
	case Publish:
		ops = append(ops, OpPublish)
	case ExpandOnNode:
	default:
		return nil
	}
	if s.Expand != nil {
		ops = append(ops, OpExpand)
	}
	return ops
}

// OpFailedMessage is the kubelet's FailedMount event message for a failed
// stage or publish of the volume (the expansion records its own): its
// MountVolume texts, or its MapVolume texts for a block volume.
func OpFailedMessage(op Op, v *Volume, err error) string {
	switch {
	case op == OpStage && v.Block:
		return fmt.Sprintf("MapVolume.SetUpDevice failed for volume %q : %v", v.PV.Name, err)
	case op == OpPublish && v.Block:
		return fmt.Sprintf("MapVolume.MapPodDevice failed for volume %q : %v", v.PV.Name, err)
	case op == OpStage:
		return fmt.Sprintf("MountVolume.MountDevice failed for volume %q : %v", v.PV.Name, err)
	case op == OpPublish:
		return fmt.Sprintf("MountVolume.SetUp failed for volume %q : %v", v.SpecName(), err)
	}
	return ""
}

// WaitMessage is the per-operation FailedMount message of a wait the
// kubelet reports: the driver not registered (MountDevice), an attachment
// missing, being deleted, failed or not attached (WaitForAttach), a node
// affinity that does not match, a ReadWriteOncePod volume another pod uses,
// an inline volume its driver does not take (SetUp). Plain waits record
// nothing: "".
func (s Step) WaitMessage() string {
	if s.Action == Wait && s.Reason == EphemeralNotSupported {
		return s.Err // an inline volume: the whole text, named by the pod's volume
	}
	if s.Action != Wait || s.Err == "" || s.Volume == nil {
		return ""
	}
	prefix := "MountVolume.WaitForAttach failed"
	switch s.Reason {
	case DriverNotServed:
		prefix = "MountVolume.MountDevice failed"
		if s.Volume.Inline != nil {
			prefix = "MountVolume.SetUp failed"
		}
	case NodeAffinityMismatch:
		prefix = "MountVolume.NodeAffinity check failed"
	case InUseByAnotherPod:
		prefix = "MountVolume.SetUp failed"
	}
	if s.Volume.Block {
		switch s.Reason {
		case DriverNotServed, InUseByAnotherPod:
			prefix = "MapVolume.SetUpDevice failed"
		case NodeAffinityMismatch:
			prefix = "MapVolume.NodeAffinity check failed"
		default:
			prefix = "MapVolume.WaitForAttach failed"
		}
	}
	return fmt.Sprintf("%s for volume %q : %s", prefix, s.Volume.SpecName(), s.Err)
}

// ExpandOp is one operation of a node expansion, in the order the agent
// carries them out.
type ExpandOp int

const (
	// WarnReadOnly: FileSystemResizeFailed events on the pod and the
	// claim: a read-only mount does not grow.
	WarnReadOnly ExpandOp = iota
	// MarkInProgress: the claim's resize status NodeResizeInProgress,
	// written against the claim's resourceVersion.
	MarkInProgress
	// CallNodeExpand: NodeExpandVolume on the pod's publication; its
	// success records FileSystemResizeSuccessful on the pod and the claim,
	// its failure is handled as Expansion.Failed says.
	CallNodeExpand
	// FinishClaim: the claim's capacity, resize status and conditions in
	// one write, against the claim's resourceVersion.
	FinishClaim
	// RecordSize: the node's staging record moves to Expansion.Size, so the
	// node does not expand the volume to it again.
	RecordSize
)

func (o ExpandOp) String() string {
	return [...]string{"WarnReadOnly", "MarkInProgress", "CallNodeExpand", "FinishClaim", "RecordSize"}[o]
}

// Ops lists the expansion's operations by its mode.
func (e *Expansion) Ops() []ExpandOp {
	switch e.Mode {
	case RecordOnly:
		return []ExpandOp{RecordSize}
	case SkipReadOnly:
		return []ExpandOp{WarnReadOnly, RecordSize}
	case ExpandOnly:
		return []ExpandOp{CallNodeExpand, RecordSize}
	case FinishWithoutCall:
		return []ExpandOp{MarkInProgress, FinishClaim, RecordSize}
	}
	return []ExpandOp{MarkInProgress, CallNodeExpand, FinishClaim, RecordSize}
}

// The kubelet's event reasons for node expansion.
const (
	FileSystemResizeSuccessful = "FileSystemResizeSuccessful"
	FileSystemResizeFailed     = "FileSystemResizeFailed"
	VolumeResizeFailed         = "VolumeResizeFailed"
	FailedMount                = "FailedMount"
)

// ReadOnlyMessage is the FileSystemResizeFailed message of WarnReadOnly.
func ReadOnlyMessage(pv string) string {
	return fmt.Sprintf("MountVolume.NodeExpandVolume failed for volume %q requested read-only file system", pv)
}

// ExpandedMessage is the FileSystemResizeSuccessful message of a
// NodeExpandVolume that succeeded on node.
func ExpandedMessage(pv, node string) string {
	return fmt.Sprintf("MountVolume.NodeExpandVolume succeeded for volume %q %s", pv, node)
}

// ExpandFailure is what a failed NodeExpandVolume leads to.
type ExpandFailure struct {
	// EventReason and EventMessage: the pod's event, FailedMount during a
	// mount, VolumeResizeFailed online.
	EventReason, EventMessage string
	// MarkFailed: write the claim's NodeResizeError condition (a final
	// error of an expansion that marked the claim in progress), with
	// NodeResizeInfeasible when Infeasible: the same size cannot succeed.
	MarkFailed, Infeasible bool
	// RefusedInUse: the driver cannot grow the volume while in use. As the
	// kubelet, the pod is not held back: the refused size is recorded, so
	// the node does not try it online again while the volume stays staged,
	// and the step ends without error. Otherwise the error retries the pod.
	RefusedInUse bool
}

// Failed decides what the failed NodeExpandVolume of the volume pv means.
// An error ends the expansion in the kubelet's meaning (its csi_client
// isFinalError: csierror.OperationFinal, where ResourceExhausted may still
// be running); only then is the claim marked NodeResizeError.
func (e *Expansion) Failed(pv string, err error) ExpandFailure {
	f := ExpandFailure{EventReason: VolumeResizeFailed,
		EventMessage: fmt.Sprintf("NodeExpandVolume.NodeExpandVolume failed for volume %q : %v", pv, err),
		RefusedInUse: csierror.InUse(err)}
	if e.AtMount {
		f.EventReason = FailedMount
		f.EventMessage = fmt.Sprintf("MountVolume.Setup failed while expanding volume for volume %q : %v", pv, err)
		if e.Block {
			f.EventMessage = fmt.Sprintf("MapVolume.MarkVolumeAsMounted failed while expanding volume for volume %q : %v", pv, err)
		}
	}
	if e.Mode == ExpandAndFinish && csierror.OperationFinal(err) {
		f.MarkFailed, f.Infeasible = true, csierror.ExpandInfeasible(err)
	}
	return f
}
