package binding_test

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	storagehelpers "k8s.io/component-helpers/storage/volume"

	"github.com/volplane/volplane/internal/binding"
)

func TestClaimAtRest(t *testing.T) {
	for _, c := range []struct {
		name  string
		claim *v1.PersistentVolumeClaim
		want  bool
	}{
		{"bound", newClaim("c", "1Gi", claimVolume("pv1"), claimPhase(v1.ClaimBound), claimAnn(storagehelpers.AnnBindCompleted, "yes")), true},
		{"pending", newClaim("c", "1Gi", claimPhase(v1.ClaimPending)), false},
		{"bound phase, no volume", newClaim("c", "1Gi", claimPhase(v1.ClaimBound)), false},
		{"volume named, not yet Bound", newClaim("c", "1Gi", claimVolume("pv1"), claimPhase(v1.ClaimPending)), false},
		{"lost", newClaim("c", "1Gi", claimVolume("pv1"), claimPhase(v1.ClaimLost)), false},
	} {
		if got := binding.ClaimAtRest(c.claim); got != c.want {
			t.Errorf("%s: ClaimAtRest %v, want %v", c.name, got, c.want)
		}
	}
}

func TestVolumeAtRest(t *testing.T) {
	for _, c := range []struct {
		name string
		pv   *v1.PersistentVolume
		want bool
	}{
		{"bound", newPV("pv1", "1Gi", boundTo("ns", "c"), withPhase(v1.VolumeBound)), true},
		{"bound phase, claimRef without UID", newPV("pv1", "1Gi", preBoundTo("ns", "c"), withPhase(v1.VolumeBound)), false},
		{"released, retained", newPV("pv1", "1Gi", boundTo("ns", "c"), withPhase(v1.VolumeReleased)), true},
		{"released, to delete", newPV("pv1", "1Gi", boundTo("ns", "c"), withPhase(v1.VolumeReleased), withPolicy(v1.PersistentVolumeReclaimDelete)), false},
		{"failed", newPV("pv1", "1Gi", boundTo("ns", "c"), withPhase(v1.VolumeFailed), withPolicy(v1.PersistentVolumeReclaimDelete)), true},
		{"available, free", newPV("pv1", "1Gi"), true},
		{"available, pre-bound", newPV("pv1", "1Gi", preBoundTo("ns", "c")), false},
		{"pending", newPV("pv1", "1Gi", withPhase(v1.VolumePending)), false},
	} {
		if got := binding.VolumeAtRest(c.pv); got != c.want {
			t.Errorf("%s: VolumeAtRest %v, want %v", c.name, got, c.want)
		}
	}
}
