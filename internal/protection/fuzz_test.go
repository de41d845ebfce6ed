package protection

import (
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/fuzzing"
)

// fuzzPod decodes a pod of any tenant with claim references and generic
// ephemeral volumes; "p" with volume "cache" makes the ephemeral claim
// "p-cache", which a claim of that name may or may not belong to.
func fuzzPod(in *fuzzing.Input) *v1.Pod {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: fuzzing.Pick(in, fuzzing.Namespaces...),
		Name: in.Word("p", "q"), UID: types.UID(fuzzing.Pick(in, "pod-p", "pod-q"))}}
	if in.Intn(4) > 0 {
		pod.Spec.NodeName = in.Word("node-1")
	}
	for n := in.Intn(4); n > 0; n-- {
		vol := v1.Volume{Name: in.Word("cache", "data", "")}
		switch in.Intn(3) {
		case 0:
			vol.PersistentVolumeClaim = &v1.PersistentVolumeClaimVolumeSource{ClaimName: in.Word("data", "b", "p-cache")}
		case 1:
			vol.Ephemeral = &v1.EphemeralVolumeSource{}
		default:
			vol.EmptyDir = &v1.EmptyDirVolumeSource{}
		}
		pod.Spec.Volumes = append(pod.Spec.Volumes, vol)
	}
	if in.Intn(3) == 0 {
		pod.DeletionTimestamp = &metav1.Time{}
		pod.DeletionGracePeriodSeconds = ptr.To(int64(in.Intn(2)))
	}
	pod.Status.Phase = fuzzing.Pick(in, v1.PodPending, v1.PodRunning, v1.PodSucceeded, v1.PodFailed)
	return pod
}

// fuzzClaim decodes a claim, possibly named like a pod's ephemeral claim,
// possibly controlled by a pod (or only owned by one).
func fuzzClaim(in *fuzzing.Input) *v1.PersistentVolumeClaim {
	c := in.Claim(nil)
	c.Name = in.Word("data", "b", "p-cache", "q-cache")
	if in.Bool() {
		c.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: in.Word("p", "q"),
			UID: types.UID(fuzzing.Pick(in, "pod-p", "pod-q")), Controller: ptr.To(in.Bool())}}
	}
	if in.Bool() {
		c.Finalizers = []string{ClaimFinalizer}
	}
	return c
}

// checkUse checks PodUses against its definition, both ways: a use is
// found exactly when the scheduled pod of the claim's namespace names the
// claim by claimName, or has the ephemeral volume the claim was made for
// and that the pod controls.
func checkUse(t *testing.T, pod *v1.Pod, claim *v1.PersistentVolumeClaim) {
	use, ok := PodUses(pod, claim)
	want := false
	if pod.Spec.NodeName != "" && pod.Namespace == claim.Namespace {
		for _, vol := range pod.Spec.Volumes {
			byName := vol.PersistentVolumeClaim != nil && vol.PersistentVolumeClaim.ClaimName == claim.Name
			ephemeral := vol.Ephemeral != nil && pod.Name+"-"+vol.Name == claim.Name && metav1.IsControlledBy(claim, pod) &&
				!(pod.DeletionTimestamp != nil && *pod.DeletionGracePeriodSeconds == 0)
			want = want || byName || ephemeral
		}
	}
	if ok != want {
		t.Fatalf("PodUses(%s/%s, %s/%s) = %v (%s), want %v", pod.Namespace, pod.Name, claim.Namespace, claim.Name, ok, use, want)
	}
	if ok && !slices.ContainsFunc(pod.Spec.Volumes, func(v v1.Volume) bool { return v.Name == use.Volume }) {
		t.Fatalf("use names volume %q, not one of the pod's", use.Volume)
	}
	if use.Ephemeral && !metav1.IsControlledBy(claim, pod) {
		t.Fatalf("ephemeral use of a claim %s/%s the pod does not control", claim.Namespace, claim.Name)
	}
}

// FuzzDecideClaim: a pod uses a claim exactly as PodUses defines it (no
// claim of another namespace, no look-alike ephemeral claim), the pod index
// keys stay in the pod's namespace, and the finalizer goes only after a live
// list in which no pod uses the claim.
func FuzzDecideClaim(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("\x00\x00\x00\x01\x00\x01\x00\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x01\x01\x00\x00\x01\x01"))
	f.Add([]byte("\x01\x00\x00\x01\x00\x02\x00\x01\x00\x00\x01\x02\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x02\x01\x00\x00\x01\x01\x01"))
	f.Fuzz(func(t *testing.T, data []byte) {
		in := fuzzing.New(data)
		var cached, live []*v1.Pod
		for n := in.Intn(3); n > 0; n-- {
			cached = append(cached, fuzzPod(in))
		}
		for n := in.Intn(3); n > 0; n-- {
			live = append(live, fuzzPod(in))
		}
		claim := fuzzClaim(in)
		for _, pod := range slices.Concat(cached, live) {
			checkUse(t, pod, claim)
			for _, key := range ClaimKeys(pod) {
				if !strings.HasPrefix(key, pod.Namespace+"/") {
					t.Fatalf("pod %s/%s indexed under %q", pod.Namespace, pod.Name, key)
				}
			}
		}
		listed := in.Bool()
		d := DecideClaim(ClaimFacts{Claim: claim, Cached: cached, Live: live, Listed: listed})
		_ = d.String()
		usedBy := func(pods []*v1.Pod) bool {
			return slices.ContainsFunc(pods, func(p *v1.Pod) bool { _, ok := PodUses(p, claim); return ok })
		}
		switch d.Action {
		case RemoveFinalizer:
			if !listed || claim.DeletionTimestamp == nil || usedBy(cached) || usedBy(live) {
				t.Fatalf("finalizer removed from claim in use or not listed: %s", d)
			}
		case Keep:
			if !slices.ContainsFunc(slices.Concat(cached, live), func(p *v1.Pod) bool { return p.Namespace+"/"+p.Name == d.Pod }) {
				t.Fatalf("kept for %s, no such pod", d.Pod)
			}
		}
	})
}
