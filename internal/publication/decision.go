package publication

import (
	"fmt"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
)

// Capabilities are what the driver's controller service reported.
type Capabilities struct {
	// Publish: PUBLISH_UNPUBLISH_VOLUME. Without it attachments are only
	// marked attached.
	Publish bool
	// PublishReadOnly: PUBLISH_READONLY; without it readonly is never sent.
	PublishReadOnly bool
	// SingleNodeMultiWriter: SINGLE_NODE_MULTI_WRITER, which changes how
	// ReadWriteOnce and ReadWriteOncePod map to CSI access modes.
	SingleNodeMultiWriter bool
}

// Step is what a sync of an attachment must do next.
type Step int

const (
	// None: the attachment is at rest (attached, or detached and free to go).
	None Step = iota
	// AddVolumeFinalizer: put the finalizer on the PV before anything can
	// be attached, so the PV cannot go while a VolumeAttachment needs it.
	AddVolumeFinalizer
	// Annotate: put the finalizer and the node-ID annotation on the
	// VolumeAttachment, in one write, before ControllerPublishVolume.
	Annotate
	// Publish: call ControllerPublishVolume (Decision.Publish), then mark
	// the attachment attached with the publish context.
	Publish
	// MarkAttached: a driver without PUBLISH_UNPUBLISH_VOLUME; set
	// status.attached, nothing else.
	MarkAttached
	// Unpublish: call ControllerUnpublishVolume (Decision.Unpublish), then
	// remove the attachment's finalizer and clear its status.
	Unpublish
	// Refuse: the step cannot be taken; save Decision.Err to
	// status.attachError (or detachError when Decision.Operation is
	// Detach) and retry.
	Refuse
)

func (s Step) String() string {
	return [...]string{"None", "AddVolumeFinalizer", "Annotate", "Publish", "MarkAttached", "Unpublish", "Refuse"}[s]
}

// Reason says why. The set is closed; logs and tests use the same values.
type Reason string

const (
	// ReasonAttached: status.attached is already true.
	ReasonAttached Reason = "Attached"
	// ReasonDetached: being deleted and our finalizer is gone (or was never
	// put there: a driver without publish).
	ReasonDetached Reason = "Detached"
	// ReasonNoPublish: the driver has no PUBLISH_UNPUBLISH_VOLUME.
	ReasonNoPublish Reason = "NoPublish"
	// ReasonVolumeUnprotected: the PV lacks our finalizer.
	ReasonVolumeUnprotected Reason = "VolumeUnprotected"
	// ReasonUnannotated: the attachment lacks our finalizer or the node ID.
	ReasonUnannotated Reason = "Unannotated"
	// ReasonReady: everything is in place for the CSI call.
	ReasonReady Reason = "Ready"
	// Refusals.
	ReasonBadSource      Reason = "BadSource"      // spec.source names no PV, or both kinds, or no CSI source
	ReasonVolumeNotFound Reason = "VolumeNotFound" // the PV named does not exist
	ReasonVolumeDeleting Reason = "VolumeDeleting" // the PV is marked for deletion
	ReasonBadCapability  Reason = "BadCapability"  // the PV's access modes have no CSI equivalent
	ReasonNodeIDUnknown  Reason = "NodeIDUnknown"  // no CSINode entry (nor annotation, on detach)
	ReasonVolumeNotCSI   Reason = "VolumeNotCSI"   // the PV has no spec.csi, nor an in-tree source of a migrated plugin
	// ReasonTranslationFailed: the PV's in-tree source is of a migrated
	// plugin, and csi-translation-lib cannot translate it.
	ReasonTranslationFailed Reason = "TranslationFailed"
)

// Decision is what a sync decided, and why.
type Decision struct {
	Step   Step
	Reason Reason
	// NodeID is the driver's ID of the node (Annotate, Publish, Unpublish).
	NodeID string
	// Publish is the request to send (Step Publish); Secrets are left to
	// the caller, who reads SecretRef.
	Publish *csipb.ControllerPublishVolumeRequest
	// Unpublish is the request to send (Step Unpublish).
	Unpublish *csipb.ControllerUnpublishVolumeRequest
	// SecretRef is the volume's controllerPublishSecretRef, if any.
	SecretRef *v1.SecretReference
	// Err is the error to save (Step Refuse).
	Err error
	// Operation is Detach when the attachment is being deleted: errors go
	// to detachError then, to attachError otherwise.
	Operation Operation
}

func (d Decision) String() string {
	if d.Err != nil {
		return fmt.Sprintf("%s: %s: %v", d.Step, d.Reason, d.Err)
	}
	return fmt.Sprintf("%s: %s", d.Step, d.Reason)
}

func refuse(r Reason, op Operation, err error) Decision {
	return Decision{Step: Refuse, Reason: r, Err: err, Operation: op}
}

// Operation is what an attachment is undergoing: an attach, or a detach
// once it is being deleted. It says where an error is saved.
type Operation int

const (
	Attach Operation = iota
	Detach
)

func (o Operation) String() string {
	if o == Detach {
		return "Detach"
	}
	return "Attach"
}
