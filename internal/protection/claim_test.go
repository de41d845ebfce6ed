package protection

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

// The cases of the reference's TestPVCProtectionController, as decisions:
// "cached" is what the informer holds, "live" what a live list returns
// (nil: not listed yet).
func TestDecideClaim(t *testing.T) {
	user := pod(withClaim("pvc1"))
	cases := []struct {
		name   string
		claim  *v1.PersistentVolumeClaim
		cached []*v1.Pod
		live   []*v1.Pod
		listed bool
		want   Action
		reason Reason
	}{
		{"claim without finalizer -> finalizer is added", claim(), nil, nil, false, AddFinalizer, ReasonUnprotected},
		{"claim without finalizer, in use -> finalizer is added", claim(), pods(user), nil, false, AddFinalizer, ReasonUnprotected},
		{"claim with finalizer -> nothing", claim(protected), nil, nil, false, None, ReasonProtected},
		{"deleted claim without our finalizer -> nothing", claim(deleting), nil, nil, false, None, ReasonFinalizerGone},
		{"deleted claim, nothing cached -> live list first", claim(protected, deleting), nil, nil, false, ListPods, ReasonNotInCache},
		{"deleted claim, no pods at all -> finalizer is removed", claim(protected, deleting), nil, nil, true, RemoveFinalizer, ReasonUnused},
		{"deleted claim + pod with the claim in cache -> kept without a live list", claim(protected, deleting), pods(user), nil, false, Keep, ReasonUsedByPod},
		{"deleted claim + pod with an unrelated claim and an emptyDir -> removed",
			claim(protected, deleting), nil, pods(pod(withClaim("unrelatedPVC"), withEmptyDir)), true, RemoveFinalizer, ReasonUnused},
		{"deleted claim + pod that finished (Failed) but exists -> kept",
			claim(protected, deleting), pods(pod(withClaim("pvc1"), phase(v1.PodFailed))), nil, false, Keep, ReasonUsedByPod},
		{"deleted claim + pod that finished (Succeeded) but exists -> kept",
			claim(protected, deleting), pods(pod(withClaim("pvc1"), phase(v1.PodSucceeded))), nil, false, Keep, ReasonUsedByPod},
		{"deleted claim + pod being deleted with grace 0, by claimName -> kept",
			claim(protected, deleting), pods(pod(withClaim("pvc1"), podDeleting(0))), nil, false, Keep, ReasonUsedByPod},
		{"deleted claim + pod not in the cache yet but live -> kept",
			claim(protected, deleting), nil, pods(user), true, Keep, ReasonUsedByPod},
		{"deleted claim + unscheduled pod -> removed",
			claim(protected, deleting), pods(pod(withClaim("pvc1"), unscheduled)), pods(pod(withClaim("pvc1"), unscheduled)), true, RemoveFinalizer, ReasonUnused},
		{"deleted claim + pod of another namespace with the same claim name -> removed",
			claim(protected, deleting), nil, pods(pod(withClaim("pvc1"), inNamespace("namespace-2"))), true, RemoveFinalizer, ReasonUnused},
		{"deleted claim + running pod -> kept", claim(protected, deleting), pods(pod(withClaim("pvc1"), running)), nil, false, Keep, ReasonUsedByPod},
	}
	for _, tc := range cases {
		d := DecideClaim(ClaimFacts{Claim: tc.claim, Cached: tc.cached, Live: tc.live, Listed: tc.listed})
		if d.Action != tc.want || d.Reason != tc.reason {
			t.Errorf("%s: got %s, want %s: %s", tc.name, d, tc.want, tc.reason)
		}
		if d.Reason == ReasonUsedByPod && d.Pod != "default/pod1" {
			t.Errorf("%s: kept by %q, want default/pod1", tc.name, d.Pod)
		}
	}
}

// A generic ephemeral volume keeps its claim only while the claim is the one
// made for the pod (controlled by it) and the pod is not shut down.
func TestEphemeralVolumeKeepsItsClaimUntilThePodIsShutDown(t *testing.T) {
	owner := pod(withEphemeral("scratch"))
	mine := claim(named("pod1-scratch"), ownedBy(owner), protected, deleting)
	notMine := claim(named("pod1-scratch"), protected, deleting)
	otherOwner := claim(named("pod1-scratch"), ownedBy(pod(podUID("uid2"))), protected, deleting)
	cases := []struct {
		name  string
		pod   *v1.Pod
		claim *v1.PersistentVolumeClaim
		want  bool
	}{
		{"scheduled pod, claim it controls", owner, mine, true},
		{"running pod", pod(withEphemeral("scratch"), running), mine, true},
		{"pod Succeeded but not deleted", pod(withEphemeral("scratch"), phase(v1.PodSucceeded)), mine, true},
		{"pod being deleted with a grace period", pod(withEphemeral("scratch"), podDeleting(30)), mine, true},
		{"pod shut down (grace 0)", pod(withEphemeral("scratch"), podDeleting(0)), mine, false},
		{"claim of the same name not controlled by the pod", owner, notMine, false},
		{"claim controlled by another pod", owner, otherOwner, false},
		{"unscheduled pod", pod(withEphemeral("scratch"), unscheduled), mine, false},
		{"another volume's claim name", pod(withEphemeral("other")), mine, false},
	}
	for _, tc := range cases {
		use, got := PodUses(tc.pod, tc.claim)
		if got != tc.want {
			t.Errorf("%s: uses %v, want %v", tc.name, got, tc.want)
		}
		if got && (!use.Ephemeral || use.Volume != "scratch") {
			t.Errorf("%s: use %s, want ephemeral volume scratch", tc.name, use)
		}
	}
}

// The pod index covers claimName references and ephemeral volumes, so the
// informer answers for both.
func TestClaimKeysIncludeEphemeralVolumes(t *testing.T) {
	got := ClaimKeys(pod(withClaim("data"), withEmptyDir, withEphemeral("scratch")))
	want := []string{"default/data", "default/pod1-scratch"}
	if len(got) != len(want) || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("keys %v, want %v", got, want)
	}
}

// Pod events that can free a claim (the reference's enqueue filter): a live,
// scheduled, unfinished pod only ever keeps claims, so it is skipped.
func TestPodEventMayRelease(t *testing.T) {
	cases := []struct {
		name  string
		pod   *v1.Pod
		event PodEvent
		want  bool
	}{
		{"updated running pod", pod(withClaim("pvc1"), running), PodChanged, false},
		{"updated pending scheduled pod", pod(withClaim("pvc1")), PodChanged, false},
		{"deleted running pod", pod(withClaim("pvc1"), running), PodDeleted, true},
		{"updated finished pod", pod(withClaim("pvc1"), phase(v1.PodSucceeded)), PodChanged, true},
		{"updated unscheduled pod", pod(withClaim("pvc1"), unscheduled), PodChanged, true},
		{"pod being deleted, containers stopped", pod(withClaim("pvc1"), podDeleting(30)), PodChanged, true},
		{"pod being deleted, a container running", pod(withClaim("pvc1"), running, podDeleting(30)), PodChanged, false},
	}
	for _, tc := range cases {
		if got := PodEventMayRelease(tc.pod, tc.event); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
