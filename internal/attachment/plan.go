package attachment

import (
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// Plan is what one node's sync must do, in order: write the node's
// volumesAttached (which already leaves out every volume to detach), then
// delete the attachments of Detach, then create those of Create, then
// record Events.
type Plan struct {
	Create []Attach
	Detach []Detach
	Wait   []Wait
	// VolumesAttached is the node's status.volumesAttached to be, sorted;
	// StatusChanged says it differs from what the node holds.
	VolumesAttached []v1.AttachedVolume
	StatusChanged   bool
	// StatusDeferred: VolumesAttached only adds volumes to what the node
	// holds, and the last patch was less than the node's interval ago
	// (Facts.StatusInterval, grown by Facts.Status while the node is busy),
	// so it waits (StatusChanged is false, RequeueAfter says until when) and
	// the attaches of that moment go out in one patch. Each patch is the
	// whole list, so at 10 attaches a second on a node, one patch in 2s
	// instead of one per attach, as the reference's status updater batches
	// its nodes' changes per reconciler pass. A removal is never deferred:
	// it must precede its detach.
	StatusDeferred bool
	Events         []Event
	// UndesiredSince holds, for every attachment no longer wanted and not
	// yet detached, when that was first seen.
	UndesiredSince map[string]time.Time
	// RequeueAfter, when positive, is when the node must be looked at again
	// although nothing changes: an unmount wait runs out, or a deferred
	// status patch is due; Requeue are the volumes it is for.
	RequeueAfter time.Duration
	Requeue      []v1.UniqueVolumeName
	// Counts are for the metrics.
	Counts Counts
}

// Counts are the volumes of one node as the reference's metrics count
// them, by unique volume name (so a decision about some volumes replaces
// their counts only, Facts.Scope).
type Counts map[v1.UniqueVolumeName]Count

// Count is one volume's share of the metrics, under its plugin name
// ("kubernetes.io/csi:<driver>", a migrated volume's with its CSI driver,
// or "kubernetes.io/iscsi", "kubernetes.io/fc").
type Count struct {
	// Desired is the plugin it is to be attached by ("" if no pod wants
	// it attached); InUse is how many of the node's pods use it.
	Desired string
	InUse   int
	// Attached is the plugin it is attached by ("" if not attached).
	Attached string
}

// Sum adds the volumes' counts up per plugin.
func (c Counts) Sum() (desired, attached, inUse map[string]int) {
	desired, attached, inUse = map[string]int{}, map[string]int{}, map[string]int{}
	for _, n := range c {
		if n.Desired != "" {
			desired[n.Desired]++
			inUse[n.Desired] += n.InUse
		}
		if n.Attached != "" {
			attached[n.Attached]++
		}
	}
	return desired, attached, inUse
}

// Attach is an attachment to create.
type Attach struct {
	Attachment *storagev1.VolumeAttachment
	// Volume is the volume's unique name: attachments of one driver and
	// handle, through whichever PersistentVolume, are of one volume.
	Volume v1.UniqueVolumeName
	// SingleNode: the volume may be attached to one node only (its access
	// modes do not allow more, MultiAttachAllowed). The decision saw no
	// attachment of Volume on another node; whoever creates this one must
	// make sure that still holds when it does, since other nodes decide
	// at the same time.
	SingleNode bool
}

// Detach is an attachment to delete, and why. Attachment is nil for an
// in-tree volume (KindInTree): it has none, and its detach is all done by
// leaving VolumesAttached.
type Detach struct {
	Attachment *storagev1.VolumeAttachment
	Volume     v1.UniqueVolumeName
	Reason     DetachReason
}

// DetachReason says why an attachment may go.
type DetachReason int

const (
	// NotInUse: no pod wants it and the node does not report it in use.
	NotInUse DetachReason = iota
	// OutOfService: the node carries the out-of-service taint, so it goes
	// even though it is reported in use.
	OutOfService
	// Timeout: it has been unwanted for longer than the unmount wait and,
	// if still in use, the node is not Ready.
	Timeout
)

// Forced says whether the detach skips the safe-to-detach check, and so
// counts as a forced detach.
func (r DetachReason) Forced() bool { return r != NotInUse }

// String is the reason as logs and the forced-detach metric name it.
func (r DetachReason) String() string {
	switch r {
	case OutOfService:
		return "out-of-service"
	case Timeout:
		return "timeout"
	}
	return "not-in-use"
}

// Wait is an attachment, wanted or not, that cannot be made or undone yet.
type Wait struct {
	// Volume is the PersistentVolume name when known, else the claim key.
	Volume string
	// Pod is the pod that wants it, when the wait is about one pod's volume.
	Pod    *v1.Pod
	Reason WaitReason
	// Detail is a human-readable explanation for logs.
	Detail string
}

// WaitReason is the closed set of reasons an attachment waits.
type WaitReason int

const (
	ClaimNotFound WaitReason = iota
	ClaimNotBound
	// ClaimNotOwned: the ephemeral claim of that name belongs to another pod.
	ClaimNotOwned
	VolumeNotFound
	// VolumeNotBoundToClaim: the volume's claimRef is not the claim.
	VolumeNotBoundToClaim
	// NodeGone: the node is deleted; nothing new is attached to it.
	NodeGone
	// Attaching: the attachment exists, the attacher has not attached it yet.
	Attaching
	// AttachFailed: the attacher reported an error and retries.
	AttachFailed
	// MultiAttach: the volume allows one node only and is attached elsewhere.
	MultiAttach
	// DetachInProgress: the attachment is being deleted.
	DetachInProgress
	// StillMounted: unwanted, but the node reports it in use.
	StillMounted
	// TranslationFailed: the in-tree source of a migrated plugin could not
	// be translated to CSI (csi-translation-lib's error).
	TranslationFailed
)

var waitReasons = [...]string{"ClaimNotFound", "ClaimNotBound", "ClaimNotOwned", "VolumeNotFound",
	"VolumeNotBoundToClaim", "NodeGone", "Attaching", "AttachFailed", "MultiAttach", "DetachInProgress",
	"StillMounted", "TranslationFailed"}

func (r WaitReason) String() string {
	if int(r) < len(waitReasons) {
		return waitReasons[r]
	}
	return "Unknown"
}
