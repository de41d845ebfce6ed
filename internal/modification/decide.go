package modification

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/volplane/volplane/internal/expansion"
)

// Facts are what a sync of one claim read.
type Facts struct {
	Claim *v1.PersistentVolumeClaim
	// Volume is the PV the claim is bound to; nil if it does not exist.
	Volume *v1.PersistentVolume
	// Served: the loop serves the PV's volume (its driver, and in node
	// deployment its node).
	Served bool
	// CanModify: the PV's driver has MODIFY_VOLUME.
	CanModify bool
	// Classes are the VolumeAttributesClasses the claim names (spec and
	// status target) that exist.
	Classes map[string]*storagev1.VolumeAttributesClass
	// Uncertain: the loop's last ControllerModifyVolume for the claim ended
	// with an error after which the driver may still be modifying.
	Uncertain bool
	// SlowRetryLeft is how long the slow retry after an infeasible answer
	// still runs (0 if none).
	SlowRetryLeft time.Duration
}

// Action is what the sync does.
type Action int

const (
	// None: nothing to do (Reason says why).
	None Action = iota
	// Modify: call ControllerModifyVolume with Class's parameters; first
	// mark the claim InProgress (and record VolumeModify) if Start.
	Modify
	// Pending: the target class does not exist; record VolumeModifyFailed,
	// and mark the claim Pending if Mark (else the earlier modification
	// keeps its InProgress mark and is retried).
	Pending
	// Rollback: the spec class was emptied while nothing was in progress:
	// drop the ModifyingVolume condition, record VolumeModifyCanceled.
	Rollback
	// Unsupported: the driver cannot modify volumes: mark the claim
	// Infeasible, record VolumeModifyFailed.
	Unsupported
	// Wait: the target was found infeasible recently; look again after
	// Decision.Wait.
	Wait
)

func (a Action) String() string {
	return [...]string{"None", "Modify", "Pending", "Rollback", "Unsupported", "Wait"}[a]
}

// Reason says why. The set is closed; logs and tests use these values.
type Reason string

const (
	ReasonNotBound  Reason = "NotBound"  // the claim is not Bound to a PV
	ReasonNoVolume  Reason = "NoVolume"  // the claim's PV does not exist (yet)
	ReasonNotServed Reason = "NotServed" // the PV is not a CSI volume of a driver served
	// BoundElsewhere: the PV's claimRef is not this claim (expansion.BoundTo).
	ReasonBoundElsewhere Reason = "BoundElsewhere"
	ReasonAtTarget       Reason = "AtTarget"     // the current class is the spec's and nothing is in progress
	ReasonRolledBack     Reason = "RolledBack"   // spec class emptied and nothing left to cancel
	ReasonCancel         Reason = "Cancel"       // spec class emptied: cancel the modification
	ReasonNoModify       Reason = "NoModify"     // the driver has no MODIFY_VOLUME
	ReasonClassMissing   Reason = "ClassMissing" // the target class does not exist
	ReasonSlowRetry      Reason = "SlowRetry"    // the target was infeasible; the slow retry runs
	ReasonResume         Reason = "Resume"       // the last call may still run: ask for the same target again
	ReasonNewTarget      Reason = "NewTarget"    // the spec class differs: start modifying to it
)

// Decision is what a sync decided, and why.
type Decision struct {
	Action Action
	Reason Reason
	// Target is the class the claim is modified to (Modify, Pending,
	// Unsupported).
	Target string
	// Class is the target class (Modify).
	Class *storagev1.VolumeAttributesClass
	// Start: Modify marks the claim InProgress first; Pending marks it
	// Pending.
	Start bool
	// Wait is how long to wait (Wait).
	Wait time.Duration
}

func (d Decision) String() string {
	return fmt.Sprintf("%s: %s (target %q)", d.Action, d.Reason, d.Target)
}

// Decide says what a sync of the claim does, in the reference's order.
func Decide(f Facts) Decision {
	claim, pv := f.Claim, f.Volume
	switch {
	case claim.Status.Phase != v1.ClaimBound || claim.Spec.VolumeName == "":
		return Decision{Reason: ReasonNotBound}
	case pv == nil:
		return Decision{Reason: ReasonNoVolume}
	case pv.Spec.CSI == nil || !f.Served:
		return Decision{Reason: ReasonNotServed}
	case !expansion.BoundTo(pv, claim):
		// spec.volumeName is the claim's user's word; only the binder's
		// claimRef makes the volume this claim's to modify.
		return Decision{Reason: ReasonBoundElsewhere}
	}
	spec, current, st := SpecClass(claim), CurrentClass(claim), claim.Status.ModifyVolumeStatus
	if st == nil && spec == current {
		return Decision{Reason: ReasonAtTarget}
	}
	inProgress := st != nil && st.Status == v1.PersistentVolumeClaimModifyVolumeInProgress
	if spec == "" && !inProgress {
		if Modifying(claim) {
			return Decision{Action: Rollback, Reason: ReasonCancel}
		}
		return Decision{Reason: ReasonRolledBack}
	}
	if inProgress && (f.Uncertain || spec == "") {
		return withClass(f, st.TargetVolumeAttributesClassName, false, ReasonResume)
	}
	if st != nil && st.Status == v1.PersistentVolumeClaimModifyVolumeInfeasible &&
		st.TargetVolumeAttributesClassName == spec && f.SlowRetryLeft > 0 {
		return Decision{Action: Wait, Reason: ReasonSlowRetry, Target: spec, Wait: f.SlowRetryLeft}
	}
	if !f.CanModify {
		return Decision{Action: Unsupported, Reason: ReasonNoModify, Target: spec}
	}
	return withClass(f, spec, true, ReasonNewTarget)
}

// withClass is Modify to target if its class exists, else Pending; start
// says whether the modification starts (or resumes one in progress).
func withClass(f Facts, target string, start bool, r Reason) Decision {
	class := f.Classes[target]
	if class == nil {
		return Decision{Action: Pending, Reason: ReasonClassMissing, Target: target, Start: start}
	}
	if !f.CanModify {
		return Decision{Action: Unsupported, Reason: ReasonNoModify, Target: target}
	}
	return Decision{Action: Modify, Reason: r, Target: target, Class: class, Start: start}
}

// SpecClass is the claim's spec.volumeAttributesClassName, "" if unset.
func SpecClass(claim *v1.PersistentVolumeClaim) string {
	if claim.Spec.VolumeAttributesClassName == nil {
		return ""
	}
	return *claim.Spec.VolumeAttributesClassName
}

// CurrentClass is the claim's status.currentVolumeAttributesClassName, ""
// if unset.
func CurrentClass(claim *v1.PersistentVolumeClaim) string {
	if claim.Status.CurrentVolumeAttributesClassName == nil {
		return ""
	}
	return *claim.Status.CurrentVolumeAttributesClassName
}

// TargetClass is the class of the claim's modifyVolumeStatus, "" if none.
func TargetClass(claim *v1.PersistentVolumeClaim) string {
	if claim.Status.ModifyVolumeStatus == nil {
		return ""
	}
	return claim.Status.ModifyVolumeStatus.TargetVolumeAttributesClassName
}

// AtRest says whether the claim needs no modification: nothing in its
// status and the current class is the spec's.
func AtRest(claim *v1.PersistentVolumeClaim) bool {
	return claim.Status.ModifyVolumeStatus == nil && SpecClass(claim) == CurrentClass(claim)
}

// Modifying says whether the claim carries a ModifyingVolume condition: a
// modification's trace a cancel clears.
func Modifying(claim *v1.PersistentVolumeClaim) bool {
	for _, c := range claim.Status.Conditions {
		if c.Type == v1.PersistentVolumeClaimVolumeModifyingVolume {
			return true
		}
	}
	return false
}
