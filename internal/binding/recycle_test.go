package binding_test

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	storagehelpers "k8s.io/component-helpers/storage/volume"

	"github.com/volplane/volplane/internal/binding"
)

var scrubStart = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

// releasedForScrub is a Released Recycle volume whose claim "c" is gone;
// recorded names the recycler pod UID recorded on it ("" for none).
func releasedForScrub(recorded string) *v1.PersistentVolume {
	pv := newPV("pv1", "1Gi", boundTo("default", "c"), withPhase(v1.VolumeReleased),
		withPolicy(v1.PersistentVolumeReclaimRecycle))
	if recorded != "" {
		pv.Annotations = map[string]string{binding.AnnRecyclerPod: recorded}
	}
	return pv
}

// recyclerPod is a running pod named recycler-for-pv1, created at
// scrubStart, scrubbing the release of claim "c".
func recyclerPod(uid string, opts ...podOpt) *v1.Pod {
	return newPod("recycler-for-pv1", append([]podOpt{func(pod *v1.Pod) {
		pod.UID = types.UID(uid)
		pod.CreationTimestamp = metav1.NewTime(scrubStart)
		pod.Annotations = map[string]string{binding.AnnRecycledClaim: string(claimUID("c"))}
		pod.Status.Phase = v1.PodRunning
	}}, opts...)...)
}

func podPhase(p v1.PodPhase, msg string) podOpt {
	return func(pod *v1.Pod) { pod.Status.Phase, pod.Status.Message = p, msg }
}
func podForClaim(uid types.UID) podOpt {
	return func(pod *v1.Pod) { pod.Annotations[binding.AnnRecycledClaim] = string(uid) }
}
func podUnannotated() podOpt { return func(pod *v1.Pod) { pod.Annotations = nil } }
func podDeleting() podOpt {
	return func(pod *v1.Pod) { now := metav1.NewTime(scrubStart); pod.DeletionTimestamp = &now }
}

func TestDecideScrub(t *testing.T) {
	const timeout = 5 * time.Minute
	cases := []struct {
		name    string
		in      binding.ScrubInput
		action  binding.ScrubAction
		message string
		retry   time.Duration
	}{
		{name: "no pod and none recorded: start one",
			in:     binding.ScrubInput{Volume: releasedForScrub("")},
			action: binding.ScrubStart},
		{name: "the recorded pod is not in the cache: read it live (it may be just created)",
			in:     binding.ScrubInput{Volume: releasedForScrub("ours")},
			action: binding.ScrubCheckLive},
		{name: "the recorded pod is gone for the API server too: scrub again",
			in:     binding.ScrubInput{Volume: releasedForScrub("ours"), LiveChecked: true},
			action: binding.ScrubStart},
		{name: "a Succeeded pod nobody recorded (user-made or left over) is removed, not trusted",
			in:     binding.ScrubInput{Volume: releasedForScrub(""), Pod: recyclerPod("theirs", podPhase(v1.PodSucceeded, ""), podUnannotated())},
			action: binding.ScrubRemoveOther, message: "Recycle failed: old recycler pod found, will retry later"},
		{name: "a Succeeded pod that copies our annotations but has another UID is removed",
			in:     binding.ScrubInput{Volume: releasedForScrub("ours"), Pod: recyclerPod("forged", podPhase(v1.PodSucceeded, ""))},
			action: binding.ScrubRemoveOther, message: "Recycle failed: old recycler pod found, will retry later"},
		{name: "our pod from an earlier release of the volume does not vouch for this one",
			in:     binding.ScrubInput{Volume: releasedForScrub("ours"), Pod: recyclerPod("ours", podPhase(v1.PodSucceeded, ""), podForClaim("uid-earlier"))},
			action: binding.ScrubRemoveOther, message: "Recycle failed: old recycler pod found, will retry later"},
		{name: "a foreign pod already going away is waited for",
			in:     binding.ScrubInput{Volume: releasedForScrub(""), Pod: recyclerPod("theirs", podDeleting())},
			action: binding.ScrubWaitOtherGone},
		{name: "our pod succeeded",
			in:     binding.ScrubInput{Volume: releasedForScrub("ours"), Pod: recyclerPod("ours", podPhase(v1.PodSucceeded, ""))},
			action: binding.ScrubSucceeded},
		{name: "our pod failed",
			in:     binding.ScrubInput{Volume: releasedForScrub("ours"), Pod: recyclerPod("ours", podPhase(v1.PodFailed, "disk on fire"))},
			action: binding.ScrubFailed, message: "Recycle failed: recycler pod recycler-for-pv1 failed: disk on fire"},
		{name: "our pod runs: look again at its deadline",
			in:     binding.ScrubInput{Volume: releasedForScrub("ours"), Pod: recyclerPod("ours"), Now: scrubStart.Add(time.Minute), Timeout: timeout},
			action: binding.ScrubWait, retry: 4*time.Minute + time.Second},
		{name: "our pod ran out of time",
			in:     binding.ScrubInput{Volume: releasedForScrub("ours"), Pod: recyclerPod("ours"), Now: scrubStart.Add(6 * time.Minute), Timeout: timeout},
			action: binding.ScrubFailed, message: "Recycle failed: recycler pod recycler-for-pv1 did not finish in 5m0s"},
		{name: "failed before, no pod: not scrubbed again",
			in:     binding.ScrubInput{Volume: failedScrub()},
			action: binding.ScrubOver},
		{name: "failed before, its pod going away",
			in:     binding.ScrubInput{Volume: failedScrub(), Pod: recyclerPod("ours", podDeleting())},
			action: binding.ScrubOver},
		{name: "failed before, its pod left: remove it",
			in:     binding.ScrubInput{Volume: failedScrub(), Pod: recyclerPod("ours", podPhase(v1.PodFailed, "disk on fire"))},
			action: binding.ScrubRemoveLeftover},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := binding.DecideScrub(tc.in)
			if d.Action != tc.action || d.Message != tc.message || d.RetryAfter != tc.retry {
				t.Errorf("decided %s message %q retry %s; want %s message %q retry %s",
					d, d.Message, d.RetryAfter, tc.action, tc.message, tc.retry)
			}
		})
	}
}

// failedScrub is releasedForScrub after its scrub failed.
func failedScrub() *v1.PersistentVolume {
	pv := releasedForScrub("ours")
	pv.Status.Phase = v1.VolumeFailed
	return pv
}

// A pod without a UID (not from an API server) is never ours, even when
// the volume records an empty one.
func TestAPodWithoutUIDIsNeverOurScrub(t *testing.T) {
	pv := releasedForScrub("")
	pv.Annotations = map[string]string{binding.AnnRecyclerPod: ""}
	if binding.IsOurScrub(pv, recyclerPod("")) {
		t.Error("a pod without UID was taken for ours")
	}
}

// The record of a scrub goes with the claimRef when the volume is freed,
// and is written only when it changes.
func TestScrubRecordSteps(t *testing.T) {
	pv := releasedForScrub("")
	withAnn(storagehelpers.AnnBoundByController, "yes")(pv)
	recorded := binding.RecordScrub(pv, recyclerPod("ours"))
	if recorded == nil || recorded.Annotations[binding.AnnRecyclerPod] != "ours" {
		t.Fatalf("RecordScrub wrote %v", recorded)
	}
	if _, ok := pv.Annotations[binding.AnnRecyclerPod]; ok {
		t.Error("RecordScrub modified its argument")
	}
	if again := binding.RecordScrub(recorded, recyclerPod("ours")); again != nil {
		t.Error("recording the same pod twice writes again")
	}
	freed := binding.FinishScrubSpec(recorded)
	if freed == nil || freed.Spec.ClaimRef != nil || freed.Annotations != nil {
		t.Errorf("FinishScrubSpec left claimRef %v annotations %v", freed.Spec.ClaimRef, freed.Annotations)
	}
	if binding.FinishScrubSpec(freed) != nil {
		t.Error("freeing a free volume writes again")
	}
}
