package health

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Event reasons: the external-health-monitor's (pkg/csi-handler
// pv_checker.go), on claims from the health-monitor loop and on pods from
// the node agent.
const (
	// ReasonAbnormal (Warning): the volume turned abnormal or its set of
	// conditions changed; the message is Summary of the conditions.
	ReasonAbnormal = "VolumeConditionAbnormal"
	// ReasonNormal (Normal): the volume returned to normal.
	ReasonNormal = "VolumeConditionNormal"
	// RecoveredMessage is the external-health-monitor's message of ReasonNormal.
	RecoveredMessage = "The Volume returns to the healthy state"
)

// Skip says why a volume's health is not reported on a claim: a closed set,
// used by logs and tests.
type Skip string

const (
	// SkipNone: the claim is the volume's and is reported on.
	SkipNone Skip = ""
	// SkipNotCSI: the volume is not a CSI volume.
	SkipNotCSI Skip = "NotCSI"
	// SkipUnbound: the volume has no claimRef, or its claim is gone.
	SkipUnbound Skip = "Unbound"
	// SkipNotTheClaims: the claim named by the volume's claimRef is not the
	// one bound to it (another UID, or its spec.volumeName names another
	// volume): nothing a claim's user writes may bring another volume's
	// health onto it.
	SkipNotTheClaims Skip = "NotTheClaims"
)

// Event is one event to record on the claim or pod.
type Event struct {
	Type, Reason, Message string
}

// ClaimInput is what the monitor knows of one volume at one poll.
type ClaimInput struct {
	Volume *v1.PersistentVolume
	// Claim is the claim the volume's claimRef names, nil if none exists.
	Claim *v1.PersistentVolumeClaim
	// Now is the driver's answer: nil conditions is healthy.
	Now []v1.VolumeHealthCondition
	// Before is what was last reported for this claim (events or status);
	// nil is healthy.
	Before []v1.VolumeHealthCondition
	// WriteStatus: the CSIVolumeHealth gate is on, so the claim's
	// status.healthStatus holds the conditions.
	WriteStatus bool
	Time        metav1.Time
}

// ClaimDecision is what to do for one claim.
type ClaimDecision struct {
	Skip Skip
	// Event to record, nil for none.
	Event *Event
	// Want is the claim with its new status.healthStatus, nil when the
	// status does not change.
	Want *v1.PersistentVolumeClaim
}

// Owner checks that claim is the one pv is bound to: pv's claimRef names
// it with its UID and claim's spec.volumeName names pv.
func Owner(pv *v1.PersistentVolume, claim *v1.PersistentVolumeClaim) Skip {
	switch {
	case pv.Spec.CSI == nil:
		return SkipNotCSI
	case pv.Spec.ClaimRef == nil || claim == nil:
		return SkipUnbound
	case claim.Namespace != pv.Spec.ClaimRef.Namespace || claim.Name != pv.Spec.ClaimRef.Name ||
		claim.UID != pv.Spec.ClaimRef.UID || claim.Spec.VolumeName != pv.Name:
		return SkipNotTheClaims
	}
	return SkipNone
}

// DecideClaim decides one claim at one poll: a Warning event when the
// volume turns abnormal or its conditions change, a Normal event when it
// returns to normal, and, with WriteStatus, status.healthStatus set to the
// conditions (their lastTransitionTime when the set changes) or cleared.
func DecideClaim(in ClaimInput) ClaimDecision {
	if skip := Owner(in.Volume, in.Claim); skip != SkipNone {
		return ClaimDecision{Skip: skip}
	}
	d := ClaimDecision{Event: transitionEvent(in.Before, in.Now)}
	if in.WriteStatus {
		d.Want = claimStatus(in.Claim, in.Now, in.Time)
	}
	return d
}

// transitionEvent is the event of a change from before to now, nil when
// the set of (status, reason) is the same.
func transitionEvent(before, now []v1.VolumeHealthCondition) *Event {
	switch {
	case SetsEqual(before, now):
		return nil
	case len(now) == 0:
		return &Event{Type: v1.EventTypeNormal, Reason: ReasonNormal, Message: RecoveredMessage}
	}
	return &Event{Type: v1.EventTypeWarning, Reason: ReasonAbnormal, Message: Summary(now)}
}

// claimStatus is claim with status.healthStatus holding now, nil when the
// field already says so (a message-only change is no write).
func claimStatus(claim *v1.PersistentVolumeClaim, now []v1.VolumeHealthCondition, t metav1.Time) *v1.PersistentVolumeClaim {
	have := claim.Status.HealthStatus
	if len(now) == 0 {
		if have == nil {
			return nil
		}
		want := claim.DeepCopy()
		want.Status.HealthStatus = nil
		return want
	}
	if have != nil && SetsEqual(have.HealthConditions, now) {
		return nil
	}
	want := claim.DeepCopy()
	want.Status.HealthStatus = &v1.VolumeHealthStatus{
		HealthConditions: append([]v1.VolumeHealthCondition(nil), now...), LastTransitionTime: t,
	}
	return want
}
