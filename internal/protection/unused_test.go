package protection

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func bound(c *v1.PersistentVolumeClaim) { c.Status.Phase = v1.ClaimBound }

func withUnused(status v1.ConditionStatus) func(*v1.PersistentVolumeClaim) {
	return func(c *v1.PersistentVolumeClaim) {
		c.Status.Conditions = append(c.Status.Conditions,
			v1.PersistentVolumeClaimCondition{Type: "Resizing", Status: v1.ConditionTrue},
			v1.PersistentVolumeClaimCondition{Type: v1.PersistentVolumeClaimUnused, Status: status, LastTransitionTime: metav1.Unix(100, 0)})
	}
}

// The Unused cases of the reference's v1.37 TestPVCProtectionController
// ("feature enabled: ..."), as decisions.
func TestDecideUnused(t *testing.T) {
	now := metav1.Unix(123, 0)
	cases := []struct {
		name         string
		claim        *v1.PersistentVolumeClaim
		cached, live []*v1.Pod
		listed       bool
		want         UnusedAction
		status       v1.ConditionStatus
	}{
		{"unused bound claim, nothing cached -> live list first", claim(bound, protected), nil, nil, false, UnusedListPods, ""},
		{"unused bound claim, no pods -> Unused=True", claim(bound, protected), nil, nil, true, UnusedWrite, v1.ConditionTrue},
		{"already Unused=True and still unused -> nothing", claim(bound, protected, withUnused(v1.ConditionTrue)), nil, nil, true, UnusedAtRest, ""},
		{"running pod, Unused=True -> Unused=False without a live list",
			claim(bound, protected, withUnused(v1.ConditionTrue)), pods(pod(withClaim("pvc1"), running)), nil, false, UnusedWrite, v1.ConditionFalse},
		{"running pod, no condition -> Unused=False", claim(bound), pods(pod(withClaim("pvc1"), running)), nil, false, UnusedWrite, v1.ConditionFalse},
		{"running pod, already Unused=False -> nothing", claim(bound, withUnused(v1.ConditionFalse)), pods(pod(withClaim("pvc1"), running)), nil, false, UnusedAtRest, ""},
		{"unscheduled pending pod counts -> Unused=False", claim(bound), pods(pod(withClaim("pvc1"), unscheduled)), nil, false, UnusedWrite, v1.ConditionFalse},
		{"Succeeded pod does not count -> Unused=True", claim(bound), pods(pod(withClaim("pvc1"), phase(v1.PodSucceeded))), nil, true, UnusedWrite, v1.ConditionTrue},
		{"Failed pod does not count -> Unused=True", claim(bound), pods(pod(withClaim("pvc1"), phase(v1.PodFailed))), nil, true, UnusedWrite, v1.ConditionTrue},
		{"pod found by the live list only -> Unused=False", claim(bound), nil, pods(pod(withClaim("pvc1"))), true, UnusedWrite, v1.ConditionFalse},
		{"pod of another namespace with the same claim name -> Unused=True",
			claim(bound), nil, pods(pod(withClaim("pvc1"), inNamespace("namespace-2"))), true, UnusedWrite, v1.ConditionTrue},
		{"ephemeral volume whose claim of that name the pod does not control -> Unused=True",
			claim(bound, named("pod1-scratch")), nil, pods(pod(withEphemeral("scratch"))), true, UnusedWrite, v1.ConditionTrue},
		{"ephemeral volume whose claim the pod controls -> Unused=False",
			claim(bound, named("pod1-scratch"), ownedBy(pod())), pods(pod(withEphemeral("scratch"))), nil, false, UnusedWrite, v1.ConditionFalse},
	}
	for _, tc := range cases {
		d := DecideUnused(ClaimFacts{Claim: tc.claim, Cached: tc.cached, Live: tc.live, Listed: tc.listed}, now)
		if d.Action != tc.want {
			t.Errorf("%s: action %v, want %v", tc.name, d.Action, tc.want)
			continue
		}
		if d.Action != UnusedWrite {
			continue
		}
		c := d.Condition
		if c.Type != v1.PersistentVolumeClaimUnused || c.Status != tc.status || !c.LastTransitionTime.Equal(&now) {
			t.Errorf("%s: condition %+v, want Unused=%s at %v", tc.name, c, tc.status, now)
		}
		wantReason, wantMessage := UnusedReasonUnused, UnusedMessageUnused
		if tc.status == v1.ConditionFalse {
			wantReason, wantMessage = UnusedReasonInUse, UnusedMessageInUse
		}
		if c.Reason != wantReason || c.Message != wantMessage {
			t.Errorf("%s: reason %q message %q, want %q %q", tc.name, c.Reason, c.Message, wantReason, wantMessage)
		}
	}
}

// Only Bound claims not being deleted are tracked, and only with the gate on
// (v1.37 added the Bound check so the condition never races the binder).
func TestUnusedTracked(t *testing.T) {
	cases := []struct {
		name  string
		gate  bool
		claim *v1.PersistentVolumeClaim
		want  bool
	}{
		{"gate on, bound", true, claim(bound), true},
		{"gate off, bound", false, claim(bound), false},
		{"gate on, pending", true, claim(), false},
		{"gate on, bound, being deleted", true, claim(bound, deleting), false},
	}
	for _, tc := range cases {
		if got := UnusedTracked(tc.gate, tc.claim); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// WithUnused replaces the condition in place, keeps the others, and leaves
// the claim it copies alone.
func TestWithUnusedReplacesInPlace(t *testing.T) {
	c := claim(bound, withUnused(v1.ConditionTrue))
	out := WithUnused(c, unused(v1.ConditionFalse, UnusedReasonInUse, UnusedMessageInUse, metav1.Unix(200, 0)))
	if len(out.Status.Conditions) != 2 || out.Status.Conditions[0].Type != "Resizing" || out.Status.Conditions[1].Status != v1.ConditionFalse {
		t.Errorf("conditions %+v", out.Status.Conditions)
	}
	if UnusedCondition(c).Status != v1.ConditionTrue {
		t.Error("the original claim changed")
	}
	if got := WithUnused(claim(bound), unused(v1.ConditionTrue, UnusedReasonUnused, UnusedMessageUnused, metav1.Unix(1, 0))); len(got.Status.Conditions) != 1 {
		t.Errorf("appended %+v", got.Status.Conditions)
	}
}
