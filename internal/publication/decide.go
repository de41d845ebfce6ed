package publication

import (
	"errors"
	"fmt"
	"slices"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/volplane/volplane/internal/attachment"
)

// Input is what a sync of one attachment read.
type Input struct {
	// Attachment is the VolumeAttachment; its spec.attacher is the driver.
	Attachment *storagev1.VolumeAttachment
	// Volume is the PV spec.source.persistentVolumeName names; nil if that
	// PV does not exist (or the source is an inline volume).
	Volume *v1.PersistentVolume
	// CSINode is the CSINode of spec.nodeName; nil if it does not exist.
	CSINode *storagev1.CSINode
	// Capabilities are the driver's.
	Capabilities Capabilities
}

// Decide says what to do next for the attachment. A sync applies the step,
// then asks again with what the write returned, until the answer is None,
// Refuse, or a CSI call has been made.
func Decide(in Input) Decision {
	va := in.Attachment
	if !in.Capabilities.Publish {
		return decideTrivial(va)
	}
	if va.DeletionTimestamp != nil {
		return decideDetach(in)
	}
	return decideAttach(in)
}

// decideTrivial is the external-attacher's trivial handler: mark attached,
// nothing more, and nothing at all on deletion.
func decideTrivial(va *storagev1.VolumeAttachment) Decision {
	switch {
	case va.DeletionTimestamp != nil:
		return Decision{Step: None, Reason: ReasonDetached}
	case va.Status.Attached:
		return Decision{Step: None, Reason: ReasonAttached}
	}
	return Decision{Step: MarkAttached, Reason: ReasonNoPublish}
}

func decideAttach(in Input) Decision {
	va, driver := in.Attachment, in.Attachment.Spec.Attacher
	if va.Status.Attached {
		return Decision{Step: None, Reason: ReasonAttached}
	}
	spec, d, ok := attachSource(in)
	if !ok {
		return d
	}
	if spec.CSI == nil {
		return refuse(ReasonVolumeNotCSI, Attach, errors.New("pv spec contained non-csi source that was not migrated"))
	}
	capability, err := Capability(spec, in.Capabilities.SingleNodeMultiWriter)
	if err != nil {
		return refuse(ReasonBadCapability, Attach, err)
	}
	nodeID, err := NodeID(in.CSINode, driver, va.Spec.NodeName)
	if err != nil {
		return refuse(ReasonNodeIDUnknown, Attach, err)
	}
	if !slices.Contains(va.Finalizers, attachment.Finalizer(driver)) || va.Annotations[attachment.NodeIDAnnotation] != nodeID {
		return Decision{Step: Annotate, Reason: ReasonUnannotated, NodeID: nodeID}
	}
	readOnly := spec.CSI.ReadOnly && in.Capabilities.PublishReadOnly
	return Decision{Step: Publish, Reason: ReasonReady, NodeID: nodeID, SecretRef: spec.CSI.ControllerPublishSecretRef,
		Publish: &csipb.ControllerPublishVolumeRequest{
			VolumeId: spec.CSI.VolumeHandle, NodeId: nodeID, VolumeCapability: capability,
			Readonly: readOnly, VolumeContext: spec.CSI.VolumeAttributes,
		}}
}

// attachSource is the PV spec to attach from, or the decision that stops
// the attach first: a missing or deleted PV, or a PV still without our
// finalizer (which must be on it before anything is attached).
func attachSource(in Input) (*v1.PersistentVolumeSpec, Decision, bool) {
	spec, err := source(in)
	if err != nil {
		return nil, refuseSource(err, Attach), false
	}
	pv := in.Volume
	if pv == nil || in.Attachment.Spec.Source.PersistentVolumeName == nil {
		return spec, Decision{}, true // inline: there is no PV to protect
	}
	if pv.DeletionTimestamp != nil {
		return nil, refuse(ReasonVolumeDeleting, Attach, fmt.Errorf("PersistentVolume %q is marked for deletion", pv.Name)), false
	}
	if !slices.Contains(pv.Finalizers, attachment.Finalizer(in.Attachment.Spec.Attacher)) {
		return nil, Decision{Step: AddVolumeFinalizer, Reason: ReasonVolumeUnprotected}, false
	}
	return spec, Decision{}, true
}

func decideDetach(in Input) Decision {
	va, driver := in.Attachment, in.Attachment.Spec.Attacher
	if !slices.Contains(va.Finalizers, attachment.Finalizer(driver)) {
		return Decision{Step: None, Reason: ReasonDetached}
	}
	spec, err := source(in)
	if err != nil {
		return refuseSource(err, Detach)
	}
	if spec.CSI == nil {
		return refuse(ReasonVolumeNotCSI, Detach, errors.New("pv spec contained non-csi source that was not migrated"))
	}
	nodeID, err := NodeID(in.CSINode, driver, va.Spec.NodeName)
	if id, ok := va.Annotations[attachment.NodeIDAnnotation]; err != nil && ok {
		nodeID, err = id, nil
	}
	if err != nil {
		return refuse(ReasonNodeIDUnknown, Detach, err)
	}
	return Decision{Step: Unpublish, Reason: ReasonReady, NodeID: nodeID, SecretRef: spec.CSI.ControllerPublishSecretRef,
		Unpublish: &csipb.ControllerUnpublishVolumeRequest{VolumeId: spec.CSI.VolumeHandle, NodeId: nodeID}}
}

// errVolumeNotFound carries the lister's NotFound text, which the
// reference saves as the attach error.
type errVolumeNotFound struct{ name string }

func (e errVolumeNotFound) Error() string {
	return fmt.Sprintf("persistentvolume %q not found", e.name)
}

func refuseSource(err error, op Operation) Decision {
	if errors.As(err, new(errVolumeNotFound)) {
		return refuse(ReasonVolumeNotFound, op, err)
	}
	if errors.As(err, new(errTranslation)) {
		return refuse(ReasonTranslationFailed, op, err)
	}
	return refuse(ReasonBadSource, op, err)
}

// errTranslation is csi-translation-lib's refusal of a migrated PV, with
// the external-attacher's text.
type errTranslation struct{ err error }

func (e errTranslation) Error() string {
	return fmt.Sprintf("failed to translate in tree pv to CSI: %v", e.err)
}

func (e errTranslation) Unwrap() error { return e.err }

// volumeSpec is the spec of the PV as its CSI driver sees it: an in-tree
// source of a migrated plugin translated by csi-translation-lib, as the
// external-attacher translates it (IsPVMigratable, TranslateInTreePVToCSI)
// before it reads the handle, fsType, read-only flag, volume attributes
// and secrets; any other PV as it is (without spec.csi it is refused).
func volumeSpec(pv *v1.PersistentVolume) (*v1.PersistentVolumeSpec, error) {
	if pv.Spec.CSI != nil {
		return &pv.Spec, nil
	}
	v, ok, err := attachment.FromPV(pv)
	switch {
	case err != nil:
		return nil, errTranslation{err}
	case ok && v.Kind == attachment.KindMigrated:
		return &v.PV.Spec, nil
	}
	return &pv.Spec, nil
}

// source is the volume spec the attachment is for: the named PV's, or the
// inline spec of a migrated inline volume.
func source(in Input) (*v1.PersistentVolumeSpec, error) {
	src := in.Attachment.Spec.Source
	switch {
	case src.PersistentVolumeName != nil && src.InlineVolumeSpec != nil:
		return nil, errors.New("both InlineCSIVolumeSource and PersistentVolumeName specified in VA source")
	case src.PersistentVolumeName != nil && in.Volume == nil:
		return nil, errVolumeNotFound{*src.PersistentVolumeName}
	case src.PersistentVolumeName != nil:
		return volumeSpec(in.Volume)
	case src.InlineVolumeSpec != nil && src.InlineVolumeSpec.CSI == nil:
		return nil, errors.New("inline volume spec contains nil CSI source")
	case src.InlineVolumeSpec != nil:
		return src.InlineVolumeSpec, nil
	}
	return nil, errors.New("neither InlineCSIVolumeSource nor PersistentVolumeName specified in VA source")
}

// NodeID is the driver's ID of the node, from its CSINode. The errors are
// the reference's texts: the lister's NotFound, or a CSINode without the
// driver (not registered there yet).
func NodeID(csiNode *storagev1.CSINode, driver, nodeName string) (string, error) {
	if csiNode == nil {
		return "", fmt.Errorf("csinode.storage.k8s.io %q not found", nodeName)
	}
	for _, d := range csiNode.Spec.Drivers {
		if d.Name == driver {
			return d.NodeID, nil
		}
	}
	return "", fmt.Errorf("CSINode %s does not contain driver %s", nodeName, driver)
}
