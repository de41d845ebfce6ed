package publication

import (
	"slices"

	v1 "k8s.io/api/core/v1"

	"github.com/volplane/volplane/internal/attachment"
)

// VolumeStep is what a sync of a PV must do about the driver's finalizer.
type VolumeStep int

const (
	// VolumeNone: not being deleted, or the finalizer is not ours to remove.
	VolumeNone VolumeStep = iota
	// VolumeKeep: being deleted, but a VolumeAttachment still names the PV.
	VolumeKeep
	// VolumeRemoveFinalizer: being deleted and no VolumeAttachment names it.
	VolumeRemoveFinalizer
)

func (s VolumeStep) String() string {
	return [...]string{"None", "Keep", "RemoveFinalizer"}[s]
}

// Reasons of a volume decision.
const (
	ReasonNotDeleting       Reason = "NotDeleting"
	ReasonNoFinalizer       Reason = "NoFinalizer"
	ReasonNamedByAttachment Reason = "NamedByAttachment"
	ReasonUnattached        Reason = "Unattached"
)

// VolumeDecision is a VolumeStep and why.
type VolumeDecision struct {
	Step   VolumeStep
	Reason Reason
}

// DecideVolume decides a PV sync for the driver's attacher: the finalizer
// goes only from a PV being deleted that no VolumeAttachment names (any
// attachment, of any node, attached or not: as long as one exists it may
// still be attached or be attached next). named says whether one does.
func DecideVolume(pv *v1.PersistentVolume, driver string, named bool) VolumeDecision {
	switch {
	case !slices.Contains(pv.Finalizers, attachment.Finalizer(driver)):
		return VolumeDecision{VolumeNone, ReasonNoFinalizer}
	case pv.DeletionTimestamp == nil:
		return VolumeDecision{VolumeNone, ReasonNotDeleting}
	case named:
		return VolumeDecision{VolumeKeep, ReasonNamedByAttachment}
	}
	return VolumeDecision{VolumeRemoveFinalizer, ReasonUnattached}
}
