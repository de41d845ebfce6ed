package modification

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

func TestDecide(t *testing.T) {
	inProgress := v1.PersistentVolumeClaimModifyVolumeInProgress
	infeasible := v1.PersistentVolumeClaimModifyVolumeInfeasible
	for _, tc := range []struct {
		name  string
		facts Facts
		want  Decision
	}{
		{"a claim not bound is left alone",
			facts(claim(wants("fast"), func(c *v1.PersistentVolumeClaim) { c.Status.Phase = v1.ClaimPending })),
			Decision{Reason: ReasonNotBound}},
		{"a claim whose PV is not there yet waits for it",
			facts(claim(wants("fast")), func(f *Facts) { f.Volume = nil }),
			Decision{Reason: ReasonNoVolume}},
		{"another driver's volume is not ours",
			facts(claim(wants("fast")), func(f *Facts) { f.Volume.Spec.CSI.Driver, f.Served = "other", false }),
			Decision{Reason: ReasonNotServed}},
		{"the spec class is the current one and nothing is in progress",
			facts(claim()),
			Decision{Reason: ReasonAtTarget}},
		{"a new spec class starts a modification",
			facts(claim(wants("fast"))),
			Decision{Action: Modify, Reason: ReasonNewTarget, Target: "fast", Class: vac("fast"), Start: true}},
		{"a class set on a claim provisioned without one starts a modification",
			facts(claim(wants("fast"), func(c *v1.PersistentVolumeClaim) { c.Status.CurrentVolumeAttributesClassName = nil })),
			Decision{Action: Modify, Reason: ReasonNewTarget, Target: "fast", Class: vac("fast"), Start: true}},
		{"a class that does not exist marks the claim Pending",
			facts(claim(wants("gold"))),
			Decision{Action: Pending, Reason: ReasonClassMissing, Target: "gold", Start: true}},
		{"a driver without MODIFY_VOLUME is reported",
			facts(claim(wants("fast")), func(f *Facts) { f.CanModify = false }),
			Decision{Action: Unsupported, Reason: ReasonNoModify, Target: "fast"}},
		{"an uncertain call is resumed with the same target, even if the spec moved on",
			facts(claim(wants("standard"), modifyStatus(inProgress, "fast")), func(f *Facts) { f.Uncertain = true }),
			Decision{Action: Modify, Reason: ReasonResume, Target: "fast", Class: vac("fast")}},
		{"an uncertain call whose class was deleted retries without a new mark",
			facts(claim(wants("gold"), modifyStatus(inProgress, "gone")), func(f *Facts) { f.Uncertain = true }),
			Decision{Action: Pending, Reason: ReasonClassMissing, Target: "gone"}},
		{"a final failure in progress is retried with the spec's class, marked again",
			facts(claim(wants("fast"), modifyStatus(inProgress, "fast"))),
			Decision{Action: Modify, Reason: ReasonNewTarget, Target: "fast", Class: vac("fast"), Start: true}},
		{"an emptied spec while in progress finishes the modification in progress",
			facts(claim(wants(""), modifyStatus(inProgress, "fast"))),
			Decision{Action: Modify, Reason: ReasonResume, Target: "fast", Class: vac("fast")}},
		{"an emptied spec after an infeasible attempt cancels",
			facts(claim(wants(""), modifyStatus(infeasible, "bad"), withCondition(v1.PersistentVolumeClaimVolumeModifyingVolume, "m"))),
			Decision{Action: Rollback, Reason: ReasonCancel}},
		{"once cancelled, nothing more",
			facts(claim(wants(""), modifyStatus(infeasible, "bad"))),
			Decision{Reason: ReasonRolledBack}},
		{"an infeasible target waits out the slow retry",
			facts(claim(wants("fast"), modifyStatus(infeasible, "fast")), func(f *Facts) { f.SlowRetryLeft = time.Minute }),
			Decision{Action: Wait, Reason: ReasonSlowRetry, Target: "fast", Wait: time.Minute}},
		{"after the slow retry, the infeasible target is asked again",
			facts(claim(wants("fast"), modifyStatus(infeasible, "fast"))),
			Decision{Action: Modify, Reason: ReasonNewTarget, Target: "fast", Class: vac("fast"), Start: true}},
		{"another target does not wait for the slow retry of an infeasible one",
			facts(claim(wants("fast"), modifyStatus(infeasible, "bad")), func(f *Facts) { f.SlowRetryLeft = time.Minute }),
			Decision{Action: Modify, Reason: ReasonNewTarget, Target: "fast", Class: vac("fast"), Start: true}},
		{"a Pending claim whose class appeared starts",
			facts(claim(wants("fast"), modifyStatus(v1.PersistentVolumeClaimModifyVolumePending, ""))),
			Decision{Action: Modify, Reason: ReasonNewTarget, Target: "fast", Class: vac("fast"), Start: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Decide(tc.facts)
			if got.String() != tc.want.String() || got.Start != tc.want.Start || got.Wait != tc.want.Wait ||
				(got.Class == nil) != (tc.want.Class == nil) || (got.Class != nil && got.Class.Name != tc.want.Class.Name) {
				t.Errorf("Decide = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// The claim's spec.volumeName is the user's word; the PV's claimRef is the
// binder's. A volume whose claimRef is not this claim (another UID, name
// or namespace, or none) is not modified for it.
func TestVolumeNotBoundBackToTheClaimIsLeftAlone(t *testing.T) {
	for name, mod := range map[string]func(*v1.PersistentVolume){
		"another UID":       func(pv *v1.PersistentVolume) { pv.Spec.ClaimRef.UID = "uid-other" },
		"another namespace": func(pv *v1.PersistentVolume) { pv.Spec.ClaimRef.Namespace = "other" },
		"another name":      func(pv *v1.PersistentVolume) { pv.Spec.ClaimRef.Name = "other" },
		"no claimRef":       func(pv *v1.PersistentVolume) { pv.Spec.ClaimRef = nil },
		"claimRef without UID (pre-bound, not bound yet)": func(pv *v1.PersistentVolume) { pv.Spec.ClaimRef.UID = "" },
	} {
		t.Run(name, func(t *testing.T) {
			f := facts(claim(wants("fast")), func(f *Facts) { f.Volume = volume(mod) })
			if got := Decide(f); got.Action != None || got.Reason != ReasonBoundElsewhere {
				t.Errorf("Decide = %v, want None: %s", got, ReasonBoundElsewhere)
			}
		})
	}
}
