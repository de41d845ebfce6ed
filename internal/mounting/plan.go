package mounting

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Action is what to do next for one CSI volume of a pod.
type Action int

const (
	// Wait: the volume cannot be mounted yet; Step.Reason says why.
	Wait Action = iota
	// Stage: the volume is not staged on the node yet; stage it (the
	// kubelet's MountDevice), then publish it.
	Stage
	// Publish: the volume is staged; publish it to the pod (SetUp).
	Publish
	// Done: the volume is published to the pod.
	Done
	// ExpandOnNode: the volume is published to the pod and its PV grew:
	// expand it on the node (Step.Expand says how), online if the pod runs.
	ExpandOnNode
)

func (a Action) String() string {
	return [...]string{"Wait", "Stage", "Publish", "Done", "ExpandOnNode"}[a]
}

// published says whether the volume is published to the pod.
func (a Action) published() bool { return a == Done || a == ExpandOnNode }

// Reason says why a volume waits. The set is closed; events, logs and tests
// use the same values.
type Reason string

const (
	// ClaimNotFound, ClaimBeingDeleted, ClaimNotBound, ClaimNotForPod,
	// VolumeNotFound, VolumeNotBoundToClaim: the pod's volume cannot be
	// processed (the reference's desired-state populator errors); the pod
	// gets a FailedMount "Unable to attach or mount volumes" event.
	ClaimNotFound         Reason = "ClaimNotFound"
	ClaimBeingDeleted     Reason = "ClaimBeingDeleted"
	ClaimNotBound         Reason = "ClaimNotBound"
	ClaimNotForPod        Reason = "ClaimNotForPod"
	VolumeNotFound        Reason = "VolumeNotFound"
	VolumeNotBoundToClaim Reason = "VolumeNotBoundToClaim"
	// VolumeModeMismatch: the pod's containers ask for a Block volume in
	// volumeMounts or a Filesystem one in volumeDevices; the pod gets the
	// same event and never starts (the kubelet's populator error).
	VolumeModeMismatch Reason = "VolumeModeMismatch"
	// DriverNotServed: no node service of the volume's driver serves this
	// node (the kubelet: driver not registered).
	DriverNotServed Reason = "DriverNotServed"
	// NotReportedInUse: an attachable volume not yet in the node's
	// status.volumesInUse; the node status is patched first.
	NotReportedInUse Reason = "NotReportedInUse"
	// NotAttached: the volume is not in node.status.volumesAttached yet, or
	// its VolumeAttachment is not attached.
	NotAttached Reason = "NotAttached"
	// NodeAffinityMismatch: the PV's node affinity does not match the
	// node's labels; the kubelet refuses to mount it (an event, and it
	// waits for the PV or the node to change).
	NodeAffinityMismatch Reason = "NodeAffinityMismatch"
	// InUseByAnotherPod: the volume's only access mode is ReadWriteOncePod
	// and another pod of the node has it published; the mount fails and
	// is retried with backoff, as the kubelet's.
	InUseByAnotherPod Reason = "InUseByAnotherPod"
	// EphemeralNotSupported: a CSI volume of the pod's own spec whose
	// driver does not list the Ephemeral lifecycle mode: the kubelet's
	// SetUp refuses it (an event) and the pod never starts.
	EphemeralNotSupported Reason = "EphemeralNotSupported"
)

// Retries says whether a wait for this reason is retried with backoff
// rather than woken by an event: nothing the agent watches says when
// another pod's publication is gone.
func (r Reason) Retries() bool { return r == InUseByAnotherPod }

// processingFailed says whether the reason is a failure to process the
// pod's volume, which the reference reports as a pod-level event, rather
// than a wait for something in progress.
func (r Reason) processingFailed() bool {
	switch r {
	case ClaimNotFound, ClaimBeingDeleted, ClaimNotBound, ClaimNotForPod, VolumeNotFound, VolumeNotBoundToClaim, VolumeModeMismatch:
		return true
	}
	return false
}

// Step is the decision for one CSI volume of a pod.
type Step struct {
	// Name is the pod's volume name.
	Name   string
	Action Action
	Reason Reason // for Wait
	// Err is the reference's error text for a processing failure, or the
	// per-operation error for a wait the kubelet reports as an event
	// (WaitForAttach, MountDevice); "" for a plain wait.
	Err string
	// Volume is the resolved volume; nil when the claim could not be
	// processed.
	Volume *Volume
	// Expand is the node expansion the volume needs, after it is published
	// (Stage, Publish: at mount) or now (ExpandOnNode); nil for none.
	// NotExpanded says why a volume whose PV grew is not expanded.
	Expand      *Expansion
	NotExpanded Reason
}

// Volume is a CSI volume as a pod mounts it.
type Volume struct {
	PV         *corev1.PersistentVolume
	Claim      *corev1.PersistentVolumeClaim
	Driver     string
	Handle     string
	ReadOnly   bool // the pod's claim source says readOnly (the PV's csi.readOnly is not the node's)
	Attachable bool
	// Attachment is the VolumeAttachment name of the volume on this node
	// (set when Attachable).
	Attachment string
	Unique     corev1.UniqueVolumeName
	// Block: the PV's volumeMode is Block: the kubelet maps it (its block
	// layout, its MapVolume texts) rather than mounts it.
	Block bool
	// PublishRefused is why publishing fails before any call (the
	// kubelet's SetUp checks: the CSIDriver does not list the Persistent
	// lifecycle mode); "" when it may go on. Staging is not held back.
	PublishRefused string
	// Inline is the CSI source of a volume in the pod's own spec (an
	// inline ephemeral volume), nil for a persistent one; PV and Claim are
	// then nil, Name is the pod's volume name and Handle the kubelet's
	// (InlineHandle). It is published only: never staged, attached,
	// expanded, nor reported in use.
	Inline *corev1.CSIVolumeSource
	Name   string
}

// SpecName is the name the kubelet's volume spec has: the PV's, or the
// pod's volume name for an inline volume. The publication's directory and
// record are named by it.
func (v *Volume) SpecName() string {
	if v.Inline != nil {
		return v.Name
	}
	return v.PV.Name
}

// PodPlan is the decision for one live pod.
type PodPlan struct {
	Pod   *corev1.Pod
	Steps []Step
}

// Ready says whether every CSI volume of the pod is published: the pod may
// run (once the expansions its mount includes succeed). A pod without CSI
// volumes is ready at once.
func (p PodPlan) Ready() bool {
	for _, s := range p.Steps {
		if !s.Action.published() {
			return false
		}
	}
	return true
}

// Plan is the decision for a node.
type Plan struct {
	// Pods are the live pods (not being deleted, not terminated), in the
	// order of World.Pods.
	Pods []PodPlan
	// Unpublish: publications of pods that are gone, being deleted or
	// terminated. Unstage: stagings no publication and no live pod needs;
	// a volume is unstaged only once it has no publication left on disk.
	Unpublish []Published
	Unstage   []Staged
	// RemovePodDirs: directories of pods that are not live, with nothing
	// published left in them.
	RemovePodDirs []types.UID
	// Finish: pods being deleted whose volumes are unpublished (nothing of
	// theirs left published on disk): their deletion may be completed, as
	// the kubelet's, before the unstage and the volumesInUse drop.
	Finish []*corev1.Pod
	// VolumesInUse is what node.status.volumesInUse must hold: the sorted
	// unique names of attachable volumes that live pods want or that are
	// still staged or published here.
	VolumesInUse []corev1.UniqueVolumeName
	// Node is what the node sync writes after its teardown.
	Node NodeAction
}
