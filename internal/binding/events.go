package binding

import (
	"fmt"
	"strings"
)

// Event reasons, spelled as kube-controller-manager spells them: users
// dashboard on these strings.
const (
	EventFailedBinding              = "FailedBinding"
	EventVolumeMismatch             = "VolumeMismatch"
	EventWaitForFirstConsumer       = "WaitForFirstConsumer"
	EventWaitForPodScheduled        = "WaitForPodScheduled"
	EventExternalProvisioning       = "ExternalProvisioning"
	EventProvisioningFailed         = "ProvisioningFailed"
	EventClaimLost                  = "ClaimLost"
	EventClaimMisbound              = "ClaimMisbound"
	EventVolumeFailedRecycle        = "VolumeFailedRecycle"
	EventVolumeFailedDelete         = "VolumeFailedDelete"
	EventVolumeUnknownReclaimPolicy = "VolumeUnknownReclaimPolicy"

	// EventNoVolumeFits is volplane's own, recorded besides the reference's
	// waiting event of a claim no volume fits: its message is the Tally
	// ("0/12 volumes available: 7 too small, 3 other class, ..."), so the
	// claim's events say why no existing volume serves it.
	EventNoVolumeFits = "NoVolumeFits"
)

// Messages whose wording is fixed (copied word for word from the Kubernetes
// persistent-volume controller, v1.36).
const (
	MsgNoVolumesNoClass       = "no persistent volumes available for this claim and no storage class is set"
	MsgWaitForFirstConsumer   = "waiting for first consumer to be created before binding"
	MsgClaimLostReference     = "Bound claim has lost reference to PersistentVolume. Data on the volume is lost!"
	MsgClaimLostVolume        = "Bound claim has lost its PersistentVolume. Data on the volume is lost!"
	MsgClaimMisbound          = "Two claims are bound to the same volume, this one is bound incorrectly"
	MsgUnknownReclaimPolicy   = "Volume has unrecognized PersistentVolumeReclaimPolicy"
	msgExternalProvisioningFm = "Waiting for a volume to be created either by the external provisioner '%s' " +
		"or manually by the system administrator. If volume creation is delayed, please verify that " +
		"the provisioner is running and correctly registered."
)

// Target says which object an event is recorded on.
type Target int

// Events go either on the claim or on the volume of a sync.
const (
	OnClaim Target = iota
	OnVolume
)

func (t Target) String() string {
	if t == OnVolume {
		return "volume"
	}
	return "claim"
}

// Event is one event a sync must record.
type Event struct {
	On      Target
	Type    string // v1.EventTypeNormal or v1.EventTypeWarning
	Reason  string
	Message string
	// Repeats marks waiting events that describe a state rather than a
	// change: the reference re-emits them on every resync; a controller may
	// suppress a repeat (same type, reason and SituationKey).
	Repeats bool
	// Situation, when set, is what tells a repeat instead of the message:
	// the message may carry details whose change is no news (how many
	// volumes of other classes exist, in NoVolumeFits).
	Situation string
}

// SituationKey is what two waiting events of one reason must share to be
// repeats of each other.
func (e Event) SituationKey() string {
	if e.Situation != "" {
		return e.Type + "/" + e.Situation
	}
	return e.Type + "/" + e.Message
}

func (e Event) String() string {
	return fmt.Sprintf("%s %s %s: %s", e.On, e.Type, e.Reason, e.Message)
}

// MsgExternalProvisioning is the ExternalProvisioning message for a provisioner.
func MsgExternalProvisioning(provisioner string) string {
	return fmt.Sprintf(msgExternalProvisioningFm, provisioner)
}

// MsgWaitForPodScheduled names the unscheduled pods using a claim.
func MsgWaitForPodScheduled(podNames []string) string {
	if len(podNames) == 1 {
		return fmt.Sprintf("waiting for pod %s to be scheduled", podNames[0])
	}
	return fmt.Sprintf("waiting for pods %s to be scheduled", strings.Join(podNames, ","))
}

// MsgVolumeMismatch is the VolumeMismatch message for a claim whose requested
// volume does not fit.
func MsgVolumeMismatch(pvName string, reason Reason) string {
	return fmt.Sprintf("Cannot bind to requested volume %q: %s", pvName, requestedMismatchText(pvName, reason))
}

// MsgAlreadyBound is the FailedBinding message for a claim whose requested
// volume belongs to another claim.
func MsgAlreadyBound(pvName string) string {
	return fmt.Sprintf("volume %q already bound to a different claim.", pvName)
}

// requestedMismatchText renders a reason with the error text Kubernetes uses
// for a claim that names its volume (checkVolumeSatisfyClaim).
func requestedMismatchText(pvName string, reason Reason) string {
	switch reason {
	case ReasonBeingDeleted:
		return fmt.Sprintf("the volume is marked for deletion %q", pvName)
	case ReasonTooSmall:
		return "requested PV is too small"
	case ReasonClassMismatch:
		return "storageClassName does not match"
	case ReasonAttributesClassMismatch:
		return "volumeAttributesClassName does not match"
	case ReasonVolumeModeMismatch:
		return "incompatible volumeMode"
	case ReasonAccessModes:
		return "incompatible accessMode"
	}
	return reason.Message()
}

func claimEvent(eventType, reason, message string, repeats bool) Event {
	return Event{On: OnClaim, Type: eventType, Reason: reason, Message: message, Repeats: repeats}
}

func volumeEvent(eventType, reason, message string, repeats bool) Event {
	return Event{On: OnVolume, Type: eventType, Reason: reason, Message: message, Repeats: repeats}
}
