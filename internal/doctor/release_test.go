package doctor

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func released(opts ...pvOpt) *v1.PersistentVolume {
	return pv("old", append([]pvOpt{claimRef("data"), phase(v1.VolumeReleased)}, opts...)...)
}

func TestDecideReleaseRefusesUnlessTheClaimIsReallyGone(t *testing.T) {
	for _, tc := range []struct {
		name    string
		pv      *v1.PersistentVolume
		claim   *v1.PersistentVolumeClaim
		refusal Refusal
		reason  string
	}{
		{"the volume does not exist", nil, nil, RefuseNotFound, "persistentvolume old: not found"},
		{"it is being deleted", released(pvDeleting(time.Minute, "kubernetes.io/pv-protection")), nil, RefuseBeingDeleted, "being deleted"},
		{"its policy is Delete", released(policy(v1.PersistentVolumeReclaimDelete)), nil, RefuseNotRetain, "reclaim policy is Delete, not Retain"},
		{"it is Bound", released(phase(v1.VolumeBound)), nil, RefuseNotReleased, "it is Bound, not Released"},
		{"it has no phase yet", released(phase("")), nil, RefuseNotReleased, "it is Pending, not Released"},
		{"it has no claimRef", released(func(p *v1.PersistentVolume) { p.Spec.ClaimRef = nil }), nil, RefuseNoClaimRef, "no claimRef"},
		{"its claim still exists", released(), claim("data"), RefuseClaimExists, "its claim ns/data still exists"},
		{"the claim is gone", released(), nil, "", "claim ns/data (uid uid-data) is gone; any claim that fits, in any namespace, may now bind it"},
		{"a new claim has the name", released(), claim("data", claimUID("uid-new")), "",
			"the claim of that name now is a new one (uid uid-new)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := DecideRelease(ReleaseInput{Name: "old", Volume: tc.pv, Claim: tc.claim})
			if d.Refusal != tc.refusal || !strings.Contains(d.Reason, tc.reason) {
				t.Fatalf("got %q: %q, want %q: ...%q...", d.Refusal, d.Reason, tc.refusal, tc.reason)
			}
			if d.Refusal == "" && d.ClaimRef != nil {
				t.Errorf("released to anyone, yet claimRef %+v", d.ClaimRef)
			}
		})
	}
}

func TestDecideReleaseRefusesWhileAnythingReachesTheData(t *testing.T) {
	newer := func(c *v1.PersistentVolumeClaim) { c.CreationTimestamp = ago(time.Minute) }
	stopped := pod("done", "n1", "data")
	stopped.Status.Phase = v1.PodSucceeded
	for _, tc := range []struct {
		name    string
		in      ReleaseInput
		refusal Refusal
		reason  string
	}{
		{"attached to a node", ReleaseInput{Attachments: []*storagev1.VolumeAttachment{va("csi-1", "old", "n1")}},
			RefuseAttached, "VolumeAttachment csi-1 attaches it to node n1"},
		{"its node reports it in use", ReleaseInput{Nodes: []*v1.Node{node("n1", inUse("old"))}},
			RefuseMounted, "node n1 reports it in use"},
		{"a scheduled pod names the old claim", ReleaseInput{Pods: []*v1.Pod{pod("web", "n1", "data")}},
			RefuseNamedByPod, "pod ns/web on node n1 names claim ns/data"},
		{"a pod older than the new claim of that name", ReleaseInput{Claim: claim("data", claimUID("uid-new"), newer),
			Pods: []*v1.Pod{func() *v1.Pod { p := pod("web", "n1", "data"); p.CreationTimestamp = ago(time.Hour); return p }()}},
			RefuseNamedByPod, "may still have it mounted"},
		{"a pod of the new claim of that name", ReleaseInput{Claim: claim("data", claimUID("uid-new"), newer),
			Pods: []*v1.Pod{func() *v1.Pod { p := pod("web", "n1", "data"); p.CreationTimestamp = metav1.NewTime(now); return p }()}},
			"", "is gone"},
		{"a finished pod, an unscheduled one, another node's volume", ReleaseInput{Pods: []*v1.Pod{stopped, pod("wait", "", "data")},
			Nodes: []*v1.Node{node("n1", inUse("other"))}}, "", "is gone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.Name, tc.in.Volume = "old", released()
			d := DecideRelease(tc.in)
			if d.Refusal != tc.refusal || !strings.Contains(d.Reason, tc.reason) {
				t.Fatalf("got %q: %q, want %q: ...%q...", d.Refusal, d.Reason, tc.refusal, tc.reason)
			}
		})
	}
}

func TestDecideReleaseToOneClaimPreBindsIt(t *testing.T) {
	to := types.NamespacedName{Namespace: "other", Name: "heir"}
	heir := func(opts ...claimOpt) *v1.PersistentVolumeClaim {
		c := claim("heir", append([]claimOpt{pending(time.Minute)}, opts...)...)
		c.Namespace = "other"
		return c
	}
	for _, tc := range []struct {
		name    string
		target  *v1.PersistentVolumeClaim
		refusal Refusal
		uid     types.UID
		reason  string
	}{
		{"the claim exists: its name and UID", heir(), "", "uid-heir", "pre-bound to claim other/heir (uid uid-heir): it binds it, no other"},
		{"the claim does not exist yet: its name only", nil, "", "", "pre-bound to claim other/heir, which does not exist yet"},
		{"the claim is being deleted", heir(claimDeleting(time.Minute, "kubernetes.io/pvc-protection")), RefuseTargetDeleting, "", "claim other/heir is being deleted"},
		{"the claim is bound to another volume", heir(boundTo("pv-x")), RefuseTargetBound, "", "claim other/heir is bound to volume pv-x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := DecideRelease(ReleaseInput{Name: "old", Volume: released(), To: to, Target: tc.target})
			if d.Refusal != tc.refusal || !strings.Contains(d.Reason, tc.reason) {
				t.Fatalf("got %q: %q, want %q: ...%q...", d.Refusal, d.Reason, tc.refusal, tc.reason)
			}
			if tc.refusal != "" {
				return
			}
			want := v1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: "other", Name: "heir", UID: tc.uid}
			if d.ClaimRef == nil || *d.ClaimRef != want {
				t.Fatalf("claimRef %+v, want %+v", d.ClaimRef, want)
			}
			out := d.Apply(released())
			if *out.Spec.ClaimRef != want || out.ResourceVersion != "8" {
				t.Errorf("applied: claimRef %+v rv %s", out.Spec.ClaimRef, out.ResourceVersion)
			}
		})
	}
}

func TestApplyClearsOnlyTheClaimRefOfACopy(t *testing.T) {
	in := released()
	out := ReleaseDecision{}.Apply(in)
	if out.Spec.ClaimRef != nil || out.ResourceVersion != "8" || in.Spec.ClaimRef == nil {
		t.Fatalf("got claimRef %v rv %s; input claimRef %v", out.Spec.ClaimRef, out.ResourceVersion, in.Spec.ClaimRef)
	}
}

func TestParseClaimKey(t *testing.T) {
	if k, err := ParseClaimKey("ns/data"); err != nil || k.Namespace != "ns" || k.Name != "data" {
		t.Errorf("ns/data: %v %v", k, err)
	}
	for _, bad := range []string{"data", "/data", "ns/", "a/b/c"} {
		if _, err := ParseClaimKey(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
