package binding_test

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/internal/binding"
)

func TestOffersOnlyAVolumeDecidedAvailableAndNotBeingDeleted(t *testing.T) {
	available := binding.VolumeDecision{Phase: v1.VolumeAvailable}
	deleting := newPV("pv1", "1Gi")
	deleting.DeletionTimestamp = &metav1.Time{}
	for _, c := range []struct {
		name string
		pv   *v1.PersistentVolume
		d    binding.VolumeDecision
		want bool
	}{
		{"available", newPV("pv1", "1Gi"), available, true},
		{"being deleted", deleting, available, false},
		{"bound", newPV("pv1", "1Gi"), binding.VolumeDecision{Phase: v1.VolumeBound}, false},
		{"released", newPV("pv1", "1Gi"), binding.VolumeDecision{Phase: v1.VolumeReleased}, false},
	} {
		if got := binding.Offers(c.pv, c.d); got != c.want {
			t.Errorf("%s: Offers %v, want %v", c.name, got, c.want)
		}
	}
}

// Only a new PV taken by a claim skips its Available write: one that had a
// phase written says Available until the bind, as it did before.
func TestDecidePhaseLeavesOnlyANewTakenVolumeToItsBind(t *testing.T) {
	available := binding.VolumeDecision{Phase: v1.VolumeAvailable}
	for _, c := range []struct {
		name    string
		pv      *v1.PersistentVolume
		d       binding.VolumeDecision
		offered binding.Offer
		want    binding.PhaseAction
	}{
		{"new and taken", newPV("pv1", "1Gi", withPhase(v1.VolumePending)), available, binding.OfferTaken, binding.PhaseLeftToBind},
		{"new, refused", newPV("pv1", "1Gi", withPhase(v1.VolumePending)), available, binding.OfferRefused, binding.PhaseWrite},
		{"released, taken", newPV("pv1", "1Gi", withPhase(v1.VolumeReleased)), available, binding.OfferTaken, binding.PhaseWrite},
		{"available, taken", newPV("pv1", "1Gi"), available, binding.OfferTaken, binding.PhaseWrite},
		{"bound", newPV("pv1", "1Gi", withPhase(v1.VolumePending)), binding.VolumeDecision{Phase: v1.VolumeBound}, binding.NotOffered, binding.PhaseWrite},
	} {
		got := binding.DecidePhase(c.pv, c.d, c.offered)
		if got.Action != c.want || got.Reason == "" {
			t.Errorf("%s: %v, want %v with a reason", c.name, got, c.want)
		}
	}
}
