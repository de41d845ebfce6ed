package doctor

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

func TestDecideReleaseRefusesUnlessTheClaimIsReallyGone(t *testing.T) {
	released := func(opts ...pvOpt) *v1.PersistentVolume {
		return pv("old", append([]pvOpt{claimRef("data"), phase(v1.VolumeReleased)}, opts...)...)
	}
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
		{"the claim is gone", released(), nil, "", "claim ns/data (uid uid-data) is gone"},
		{"a new claim has the name", released(), claim("data", claimUID("uid-new")), "",
			"the claim of that name now is a new one (uid uid-new), which this does not bind"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := DecideRelease("old", tc.pv, tc.claim)
			if d.Refusal != tc.refusal || !strings.Contains(d.Reason, tc.reason) {
				t.Fatalf("got %q: %q, want %q: ...%q...", d.Refusal, d.Reason, tc.refusal, tc.reason)
			}
		})
	}
}

func TestReleasedClearsOnlyTheClaimRefOfACopy(t *testing.T) {
	in := pv("old", claimRef("data"), phase(v1.VolumeReleased))
	in.ResourceVersion = "42"
	out := Released(in)
	if out.Spec.ClaimRef != nil || out.ResourceVersion != "42" || in.Spec.ClaimRef == nil {
		t.Fatalf("got claimRef %v rv %s; input claimRef %v", out.Spec.ClaimRef, out.ResourceVersion, in.Spec.ClaimRef)
	}
}
