package e2e

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/volplane/volplane/internal/binding"
)

// A PV pre-bound to a claim by name (claimRef without UID) is taken by that
// claim even when a smaller PV fits, and stays marked as the user's choice:
// no bound-by-controller on the PV.
func TestVolumePreBoundToClaimIsTakenOverSmallerFit(t *testing.T) {
	e := newEnv(t)
	e.availablePV(e.pv("small", "1Gi"))
	e.availablePV(e.pv("reserved", "5Gi", pvPreBound(e.ns, "data")))
	e.createClaim(e.claim("data", "1Gi"))
	e.waitBound("data", e.ns+"-reserved")

	pv, c := e.getPV(e.ns+"-reserved"), e.getClaim("data")
	if hasAnnotation(pv.ObjectMeta, annBoundByCtrl) {
		t.Errorf("pre-bound PV got %s: %v", annBoundByCtrl, pv.Annotations)
	}
	// The controller did set the claim's volumeName, so the claim says so.
	if c.Annotations[annBoundByCtrl] != "yes" || c.Annotations[annBindCompleted] != "yes" {
		t.Errorf("claim annotations %v, want bound-by-controller and bind-completed", c.Annotations)
	}
	e.stays("the smaller PV stays free", time.Second, pvStaysUnclaimed(e, e.ns+"-small"))
}

// A claim naming its PV in spec.volumeName binds that PV, not the smallest
// fit; the claim is the user's choice (no bound-by-controller on it), the PV
// side was linked by the controller.
func TestClaimWithVolumeNameBindsThatVolume(t *testing.T) {
	e := newEnv(t)
	e.availablePV(e.pv("small", "1Gi"))
	e.availablePV(e.pv("chosen", "5Gi"))
	e.createClaim(e.claim("data", "1Gi", claimVolume(e.ns+"-chosen")))
	e.waitBound("data", e.ns+"-chosen")

	pv, c := e.getPV(e.ns+"-chosen"), e.getClaim("data")
	if hasAnnotation(c.ObjectMeta, annBoundByCtrl) {
		t.Errorf("claim with a user-set volumeName got %s: %v", annBoundByCtrl, c.Annotations)
	}
	if c.Annotations[annBindCompleted] != "yes" {
		t.Errorf("claim annotations %v, want bind-completed", c.Annotations)
	}
	if pv.Annotations[annBoundByCtrl] != "yes" {
		t.Errorf("PV annotations %v, want bound-by-controller (the controller wrote its claimRef)", pv.Annotations)
	}
	e.stays("the smaller PV stays free", time.Second, pvStaysUnclaimed(e, e.ns+"-small"))
}

// A claim naming a PV that does not exist waits, Pending, and binds as soon
// as the PV appears.
func TestClaimNamingMissingVolumeBindsWhenItAppears(t *testing.T) {
	e := newEnv(t)
	e.createClaim(e.claim("data", "1Gi", claimVolume(e.ns+"-later")))
	e.waitClaimPhase("data", v1.ClaimPending)
	e.stays("the claim waits for its volume", 3*time.Second, func() string {
		if c := e.getClaim("data"); c.Status.Phase != v1.ClaimPending {
			return "phase " + string(c.Status.Phase)
		}
		return ""
	})
	e.createPV(e.pv("later", "1Gi"))
	e.waitBound("data", e.ns+"-later")
	e.noEvents("PersistentVolumeClaim", e.ns, "data", binding.EventVolumeMismatch, binding.EventFailedBinding)
}

// A claim naming a PV that is too small stays Pending with a Warning that
// says why; the PV is left alone.
func TestClaimNamingTooSmallVolumeGetsVolumeMismatch(t *testing.T) {
	e := newEnv(t)
	small := e.availablePV(e.pv("small", "1Gi"))
	e.createClaim(e.claim("data", "5Gi", claimVolume(small.Name)))
	e.waitClaimEvent("data", v1.EventTypeWarning, binding.EventVolumeMismatch,
		fmt.Sprintf("Cannot bind to requested volume %q: requested PV is too small", small.Name))
	e.stays("claim and PV stay apart", 3*time.Second, func() string {
		if c := e.getClaim("data"); c.Status.Phase != v1.ClaimPending || hasAnnotation(c.ObjectMeta, annBindCompleted) {
			return fmt.Sprintf("claim phase %s annotations %v, want Pending, not bound", c.Status.Phase, c.Annotations)
		}
		return pvStaysUnclaimed(e, small.Name)()
	})
	if pv := e.getPV(small.Name); pv.Status.Phase != v1.VolumeAvailable {
		t.Errorf("PV phase %s, want Available", pv.Status.Phase)
	}
}

// A claim naming a PV that another claim holds stays Pending with a
// FailedBinding warning; the owner keeps its PV.
func TestClaimNamingVolumeOfAnotherClaimGetsFailedBinding(t *testing.T) {
	e := newEnv(t)
	taken := e.availablePV(e.pv("taken", "1Gi"))
	e.createClaim(e.claim("owner", "1Gi"))
	e.waitBound("owner", taken.Name)

	e.createClaim(e.claim("thief", "1Gi", claimVolume(taken.Name)))
	e.waitClaimEvent("thief", v1.EventTypeWarning, binding.EventFailedBinding,
		fmt.Sprintf("volume %q already bound to a different claim.", taken.Name))
	e.stays("the thief stays Pending", 3*time.Second, func() string {
		c := e.getClaim("thief")
		if c.Status.Phase != v1.ClaimPending || hasAnnotation(c.ObjectMeta, annBindCompleted) {
			return fmt.Sprintf("thief phase %s annotations %v", c.Status.Phase, c.Annotations)
		}
		return ""
	})
	e.waitBound("owner", taken.Name)
}
