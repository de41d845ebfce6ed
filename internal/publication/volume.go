package publication

import (
	"slices"

	v1 "k8s.io/api/core/v1"
	volumehelpers "k8s.io/component-helpers/storage/volume"
	csitranslation "k8s.io/csi-translation-lib"

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
// goes only from a PV no VolumeAttachment names (any attachment, of any
// node, attached or not: as long as one exists it may still be attached or
// be attached next), and only once the PV is being deleted, or, as the
// external-attacher does (SyncNewOrUpdatedPersistentVolume), from an
// in-tree PV of a migrated plugin whose migrated-to annotation does not
// name the driver (Unclaimed). named says whether an attachment does.
func DecideVolume(pv *v1.PersistentVolume, driver string, named bool) VolumeDecision {
	switch {
	case !slices.Contains(pv.Finalizers, attachment.Finalizer(driver)):
		return VolumeDecision{VolumeNone, ReasonNoFinalizer}
	case pv.DeletionTimestamp == nil && !Unclaimed(pv, driver):
		return VolumeDecision{VolumeNone, ReasonNotDeleting}
	case named:
		return VolumeDecision{VolumeKeep, ReasonNamedByAttachment}
	}
	return VolumeDecision{VolumeRemoveFinalizer, ReasonUnattached}
}

// Unclaimed says whether pv is an in-tree PV of a migrated plugin that
// does not say it migrated to driver (storage.kubernetes.io/migrated-to):
// the external-attacher takes that as migration being off for it, and
// gives the PV back (its finalizer goes once no attachment names it). A
// PV made by hand, with no annotation, is one.
func Unclaimed(pv *v1.PersistentVolume, driver string) bool {
	if pv.Spec.CSI != nil {
		return false
	}
	if plugin, err := csitranslation.New().GetInTreePluginNameFromSpec(pv, nil); err != nil || plugin == "" {
		return false
	}
	return pv.Annotations[volumehelpers.AnnMigratedTo] != driver
}
