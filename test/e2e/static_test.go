package e2e

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

// A claim binds the smallest PV that fits; both sides are marked as bound
// by the controller, and the claim's status copies the PV's.
func TestStaticBindPicksSmallestFit(t *testing.T) {
	e := newEnv(t)
	// Available: the binder has seen each one before the claim comes.
	e.availablePV(e.pv("small", "1Gi"))
	e.availablePV(e.pv("fit", "5Gi"))
	e.availablePV(e.pv("big", "10Gi"))
	e.createClaim(e.claim("data", "2Gi"))
	e.waitBound("data", e.ns+"-fit")
	c, pv := e.getClaim("data"), e.getPV(e.ns+"-fit")
	if c.Annotations["pv.kubernetes.io/bind-completed"] != "yes" || c.Annotations["pv.kubernetes.io/bound-by-controller"] != "yes" {
		t.Errorf("claim annotations %v, want bind-completed and bound-by-controller", c.Annotations)
	}
	if pv.Annotations["pv.kubernetes.io/bound-by-controller"] != "yes" {
		t.Errorf("PV annotations %v, want bound-by-controller", pv.Annotations)
	}
	if got := c.Status.Capacity[v1.ResourceStorage]; got.String() != "5Gi" {
		t.Errorf("claim status capacity %s, want the PV's 5Gi", got.String())
	}
	for _, other := range []string{"small", "big"} {
		e.waitPVPhase(e.ns+"-"+other, v1.VolumeAvailable)
	}
}

// A PV created after its claim binds it without waiting for a resync.
func TestPVCreatedLaterBindsWaitingClaim(t *testing.T) {
	e := newEnv(t)
	e.createClaim(e.claim("data", "1Gi"))
	e.waitClaimSeen("data")
	e.createPV(e.pv("late", "1Gi"))
	e.waitBound("data", e.ns+"-late")
}
