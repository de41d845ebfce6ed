// Package expansion is the pure core of growing claims. This file is the
// hand-off: kube-controller-manager's persistentvolume-expander role
// (pkg/controller/volume/expand, Kubernetes v1.36), which expands nothing
// itself any more. For a bound claim whose request exceeds its capacity it
// only tells who will expand the volume: a CSI volume (or any volume no
// in-tree plugin expands) is the external resizer's, announced by a Normal
// ExternalExpanding event; a volume of an in-tree plugin migrated to CSI
// gets the same kind of event naming the plugin, and the claim is annotated
// volume.kubernetes.io/storage-resizer with the CSI driver, which the
// external-resizer of that driver uses to pick the claim up.
//
// DecideHandOff reads a claim and its PV and returns a HandOff: the events
// to record, in order, the annotation to write (if any) and whether to
// retry; internal/controller/expander reads, asks and writes. Every name of
// the hand-off starts with Hand, as the package also holds the resizer's
// core.
package expansion

import (
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	csitranslation "k8s.io/csi-translation-lib"

	"github.com/volplane/volplane/internal/binding"
)

// HandOffResizerAnnotation names the CSI driver that is to expand a claim of
// a migrated in-tree volume (the reference's volumetypes.VolumeResizerKey).
const HandOffResizerAnnotation = "volume.kubernetes.io/storage-resizer"

// HandOffPreResizeAnnotation is left on a PV by in-tree expansion of old
// (util.AnnPreResizeCapacity); a PV carrying it is handed off even when the
// claim's request does not exceed its capacity, as the reference does.
const HandOffPreResizeAnnotation = "volume.alpha.kubernetes.io/pre-resize-capacity"

// HandOffEventReason is the reason of every hand-off event (events.ExternalExpanding).
const HandOffEventReason = "ExternalExpanding"

// HandOffReason says why a hand-off is what it is. The set is closed; logs
// and tests use the same values.
type HandOffReason string

const (
	// HandReasonNotBound: the claim is not Bound to a volume; nothing to hand off.
	HandReasonNotBound HandOffReason = "NotBound"
	// HandReasonNotGrown: the request does not exceed status.capacity (and
	// the PV has no pre-resize annotation); nothing to hand off.
	HandReasonNotGrown HandOffReason = "NotGrown"
	// HandReasonVolumeMissing: the claim's PV is not known (yet); retried.
	HandReasonVolumeMissing HandOffReason = "VolumeMissing"
	// HandReasonVolumeNotBoundToClaim: the PV's claimRef does not name this
	// claim (BoundTo); retried, as the reference does.
	HandReasonVolumeNotBoundToClaim HandOffReason = "VolumeNotBoundToClaim"
	// HandReasonFlexVolume: a FlexVolume PV, which the reference expands with
	// its in-tree no-op plugin; volplane has no in-tree plugins and leaves it.
	HandReasonFlexVolume HandOffReason = "FlexVolume"
	// HandReasonExternal: no in-tree plugin expands the volume (every CSI
	// volume): the Normal event, nothing written, no retry.
	HandReasonExternal HandOffReason = "External"
	// HandReasonMigrated: an in-tree volume migrated to CSI: the Normal
	// event, then the resizer annotation (HandOff.Annotate, empty when the
	// claim has it already).
	HandReasonMigrated HandOffReason = "Migrated"
	// HandReasonNoCSIName: an in-tree volume whose plugin has no CSI driver
	// name: the Normal event, a Warning, and a retry.
	HandReasonNoCSIName HandOffReason = "NoCSIName"
)

// HandOffEvent is one event to record on the claim, source volume_expand.
type HandOffEvent struct {
	Type    string // v1.EventTypeNormal or v1.EventTypeWarning
	Reason  string // always HandOffEventReason
	Message string
}

// HandOff is what the expander does for one claim.
type HandOff struct {
	Reason HandOffReason
	// Events to record, in this order, before anything is written.
	Events []HandOffEvent
	// Annotate is the CSI driver to write into the claim's
	// HandOffResizerAnnotation; "" writes nothing.
	Annotate string
	// Retry, if set, fails the sync with it, so the claim is retried with
	// backoff.
	Retry error
}

func (h HandOff) String() string {
	s := string(h.Reason)
	if h.Annotate != "" {
		s += " annotate " + h.Annotate
	}
	if h.Retry != nil {
		s += " retry: " + h.Retry.Error()
	}
	return s
}

// HandOffExternalMessage is the event text for a volume the external resizer expands.
const HandOffExternalMessage = "waiting for an external controller to expand this PVC"

// HandOffMigratedMessage is the event text for a volume of inTreePlugin, migrated to CSI.
func HandOffMigratedMessage(inTreePlugin string) string {
	return fmt.Sprintf("CSI migration enabled for %s; waiting for external resizer to expand the pvc", inTreePlugin)
}

// HandOffNoCSINameMessage is the Warning text when the CSI driver of a
// migrated plugin cannot be named; key is namespace/name.
func HandOffNoCSINameMessage(key string, err error) string {
	return fmt.Sprintf("error getting CSI driver name for pvc %s, with error %v", key, err)
}

// HandOffAnnotateFailedMessage is the Warning text when writing the
// resizer annotation failed; key is namespace/name.
func HandOffAnnotateFailedMessage(key string, err error) string {
	return fmt.Sprintf("error setting resizer annotation to pvc %s, with error %v", key, err)
}

// HandOffAnnotateFailed is the Warning event for a failed write of the
// resizer annotation to claim.
func HandOffAnnotateFailed(claim *v1.PersistentVolumeClaim, err error) HandOffEvent {
	return handWarning(HandOffAnnotateFailedMessage(binding.ClaimKey(claim), err))
}

// DecideHandOff decides what the expander does for claim, whose PV
// (spec.volumeName) is pv, nil when not found. It reads and never changes
// either.
func DecideHandOff(claim *v1.PersistentVolumeClaim, pv *v1.PersistentVolume) HandOff {
	if claim.Status.Phase != v1.ClaimBound || claim.Spec.VolumeName == "" {
		return HandOff{Reason: HandReasonNotBound}
	}
	if !handGrown(claim, pv) {
		return HandOff{Reason: HandReasonNotGrown}
	}
	if pv == nil {
		return HandOff{Reason: HandReasonVolumeMissing,
			Retry: fmt.Errorf("persistent volume %q of claim %s/%s not found", claim.Spec.VolumeName, claim.Namespace, claim.Name)}
	}
	if !BoundTo(pv, claim) {
		return HandOff{Reason: HandReasonVolumeNotBoundToClaim,
			Retry: fmt.Errorf("persistent volume %s is not bound to claim %s/%s", pv.Name, claim.Namespace, claim.Name)}
	}
	if plugin := handInTreePlugin(pv); plugin != "" {
		return handMigrated(claim, plugin)
	}
	if pv.Spec.FlexVolume != nil {
		return HandOff{Reason: HandReasonFlexVolume}
	}
	return HandOff{Reason: HandReasonExternal, Events: []HandOffEvent{handNormal(HandOffExternalMessage)}}
}

// handGrown: the request exceeds status.capacity, or the PV carries the
// pre-resize annotation (the reference's two triggers). A claim with no
// capacity yet counts its capacity as zero, as the reference's comparison does.
func handGrown(claim *v1.PersistentVolumeClaim, pv *v1.PersistentVolume) bool {
	request := claim.Spec.Resources.Requests[v1.ResourceStorage]
	capacity := claim.Status.Capacity[v1.ResourceStorage]
	if request.Cmp(capacity) > 0 {
		return true
	}
	if pv == nil {
		return false
	}
	_, preResize := pv.Annotations[HandOffPreResizeAnnotation]
	return preResize
}

// handInTreePlugin is the in-tree plugin of pv when that plugin is migrated
// to CSI, "" otherwise. Every plugin csi-translation-lib knows is migrated
// in v1.36 (csimigration.PluginManager.IsMigrationEnabledForPlugin).
func handInTreePlugin(pv *v1.PersistentVolume) string {
	if pv.Spec.CSI != nil {
		return ""
	}
	plugin, err := csitranslation.New().GetInTreePluginNameFromSpec(pv, nil)
	if err != nil {
		return ""
	}
	return plugin
}

func handMigrated(claim *v1.PersistentVolumeClaim, plugin string) HandOff {
	events := []HandOffEvent{handNormal(HandOffMigratedMessage(plugin))}
	driver, err := csitranslation.New().GetCSINameFromInTreeName(plugin)
	if err == nil && driver == "" {
		err = errors.New("no CSI driver name")
	}
	if err != nil {
		msg := HandOffNoCSINameMessage(binding.ClaimKey(claim), err)
		return HandOff{Reason: HandReasonNoCSIName, Events: append(events, handWarning(msg)), Retry: errors.New(msg)}
	}
	h := HandOff{Reason: HandReasonMigrated, Events: events}
	if claim.Annotations[HandOffResizerAnnotation] != driver {
		h.Annotate = driver
	}
	return h
}

// WithResizer is the claim handed to the external resizer of driver: a
// deep copy with HandOffResizerAnnotation set, or nil when it is so
// already.
func WithResizer(claim *v1.PersistentVolumeClaim, driver string) *v1.PersistentVolumeClaim {
	if claim.Annotations[HandOffResizerAnnotation] == driver {
		return nil
	}
	out := claim.DeepCopy()
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	out.Annotations[HandOffResizerAnnotation] = driver
	return out
}

func handNormal(msg string) HandOffEvent {
	return HandOffEvent{Type: v1.EventTypeNormal, Reason: HandOffEventReason, Message: msg}
}

func handWarning(msg string) HandOffEvent {
	return HandOffEvent{Type: v1.EventTypeWarning, Reason: HandOffEventReason, Message: msg}
}
