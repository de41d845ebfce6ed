package e2e

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/volplane/volplane/internal/binding"
	"github.com/volplane/volplane/internal/controller/manager"
)

// A bound claim whose PV is deleted becomes Lost, with a Warning, and stays
// Lost; it is not bound to another PV.
func TestBoundClaimWhosePVIsDeletedIsLost(t *testing.T) {
	e := newEnv(t)
	pv := e.availablePV(e.pv("data", "1Gi"))
	e.createClaim(e.claim("data", "1Gi"))
	e.waitBound("data", pv.Name)

	e.deletePV(pv.Name)
	e.waitClaimPhase("data", v1.ClaimLost)
	e.waitClaimEvent("data", v1.EventTypeWarning, binding.EventClaimLost,
		"Bound claim has lost its PersistentVolume. Data on the volume is lost!")

	spare := e.availablePV(e.pv("spare", "1Gi"))
	e.stays("a Lost claim stays Lost", 3*time.Second, func() string {
		c := e.getClaim("data")
		if c.Status.Phase != v1.ClaimLost || c.Spec.VolumeName != pv.Name {
			return "claim phase " + string(c.Status.Phase) + " volumeName " + c.Spec.VolumeName
		}
		return pvStaysUnclaimed(e, spare.Name)()
	})
	if evs := e.binderEvents("PersistentVolumeClaim", e.ns, "data", binding.EventClaimLost); len(evs) != 1 || evs[0].Count != 1 {
		t.Errorf("ClaimLost recorded %v, want once: only the change to Lost is news", summarize(evs))
	}
}

// A Lost claim is Bound again when a PV of the same name comes back pointing
// at it, UID included (a restored backup of the PV object), as the
// reference's syncBoundClaim does. The binder here never resyncs within the
// test, so the PV's return itself must wake the claim. Like the reference,
// no event marks the return, and ClaimLost is not repeated.
func TestLostClaimIsBoundAgainWhenItsPVReturns(t *testing.T) {
	withoutSharedBinder(t)
	e := newEnv(t)
	runManager(t, manager.Config{Workers: 2, ResyncPeriod: time.Hour})
	pv := e.availablePV(e.pv("data", "1Gi"))
	e.createClaim(e.claim("data", "1Gi"))
	e.waitBound("data", pv.Name)
	e.deletePV(pv.Name)
	c := e.waitClaimPhase("data", v1.ClaimLost)

	e.createPV(e.pv("data", "1Gi", pvBoundTo(c), pvAnnotation(annBoundByCtrl, "yes")))
	e.waitBound("data", pv.Name)
	if got := e.getClaim("data").Status.Capacity[v1.ResourceStorage]; got.String() != "1Gi" {
		t.Errorf("claim status capacity %s, want 1Gi", got.String())
	}
	if evs := e.binderEvents("PersistentVolumeClaim", e.ns, "data", binding.EventClaimLost); len(evs) != 1 || evs[0].Count != 1 {
		t.Errorf("ClaimLost recorded %v, want once (for the loss only)", summarize(evs))
	}
	if evs := e.binderEvents("PersistentVolumeClaim", e.ns, "data", binding.EventClaimMisbound); len(evs) != 0 {
		t.Errorf("ClaimMisbound recorded %v, want none", summarize(evs))
	}
}

// A PV that the controller bound to a claim which is bound to another PV is
// freed: claimRef and bound-by-controller go, the PV is Available again.
func TestControllerBoundVolumeOfClaimBoundElsewhereIsUnbound(t *testing.T) {
	e := newEnv(t)
	a := e.availablePV(e.pv("a", "1Gi"))
	c := e.createClaim(e.claim("data", "1Gi", claimVolume(a.Name),
		claimAnnotation(annBindCompleted, "yes"), claimAnnotation(annBoundByCtrl, "yes")))
	e.waitBound("data", a.Name)

	b := e.createPV(e.pv("b", "1Gi", pvBoundTo(c), pvAnnotation(annBoundByCtrl, "yes")))
	e.eventually("PV b freed", func() string {
		pv := e.getPV(b.Name)
		switch {
		case pv.Spec.ClaimRef != nil:
			return "claimRef still " + pv.Spec.ClaimRef.Name + " uid " + string(pv.Spec.ClaimRef.UID)
		case hasAnnotation(pv.ObjectMeta, annBoundByCtrl):
			return "bound-by-controller still set"
		case pv.Status.Phase != v1.VolumeAvailable:
			return "phase " + string(pv.Status.Phase)
		}
		return ""
	})
	e.waitBound("data", a.Name)
}

// A PV the user pre-bound to a claim that is bound to another PV keeps the
// user's claimRef (name and namespace) and loses only the UID.
func TestUserPreBoundVolumeOfClaimBoundElsewhereKeepsItsClaimRef(t *testing.T) {
	e := newEnv(t)
	a := e.availablePV(e.pv("a", "1Gi"))
	c := e.createClaim(e.claim("data", "1Gi", claimVolume(a.Name),
		claimAnnotation(annBindCompleted, "yes"), claimAnnotation(annBoundByCtrl, "yes")))
	e.waitBound("data", a.Name)

	b := e.createPV(e.pv("b", "1Gi", pvBoundTo(c)))
	e.eventually("PV b freed", func() string {
		pv := e.getPV(b.Name)
		switch {
		case pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.Name != "data" || pv.Spec.ClaimRef.Namespace != e.ns:
			return "claimRef lost the user's choice: " + describeRef(pv.Spec.ClaimRef)
		case pv.Spec.ClaimRef.UID != "":
			return "claimRef UID still " + string(pv.Spec.ClaimRef.UID)
		case pv.Status.Phase != v1.VolumeAvailable:
			return "phase " + string(pv.Status.Phase)
		}
		return ""
	})
	e.waitBound("data", a.Name)
}

func describeRef(ref *v1.ObjectReference) string {
	if ref == nil {
		return "<nil>"
	}
	return ref.Namespace + "/" + ref.Name + " uid " + string(ref.UID)
}

// A claim marked bind-completed without a volumeName (restored from a
// backup that lost it, say) is Lost with the reference's warning, once.
func TestBoundClaimWithoutVolumeNameIsLost(t *testing.T) {
	e := newEnv(t)
	e.createClaim(e.claim("data", "1Gi", claimAnnotation(annBindCompleted, "yes")))
	e.waitClaimPhase("data", v1.ClaimLost)
	e.waitClaimEvent("data", v1.EventTypeWarning, binding.EventClaimLost, binding.MsgClaimLostReference)
	time.Sleep(quietPeriodForEvent)
	if evs := e.binderEvents("PersistentVolumeClaim", e.ns, "data", binding.EventClaimLost); len(evs) != 1 || evs[0].Count != 1 {
		t.Errorf("ClaimLost recorded %v, want once", summarize(evs))
	}
}

// A claim marked bind-completed whose volume is bound to another claim is
// Lost with ClaimMisbound; the volume stays with its claim.
func TestClaimWhoseVolumeIsBoundToAnotherClaimIsMisbound(t *testing.T) {
	e := newEnv(t)
	pv := e.availablePV(e.pv("data", "1Gi"))
	e.createClaim(e.claim("owner", "1Gi"))
	e.waitBound("owner", pv.Name)

	e.createClaim(e.claim("impostor", "1Gi", claimVolume(pv.Name),
		claimAnnotation(annBindCompleted, "yes"), claimAnnotation(annBoundByCtrl, "yes")))
	e.waitClaimPhase("impostor", v1.ClaimLost)
	e.waitClaimEvent("impostor", v1.EventTypeWarning, binding.EventClaimMisbound, binding.MsgClaimMisbound)
	e.stays("the volume stays with its owner", 2*time.Second, func() string {
		if got := e.getPV(pv.Name); got.Spec.ClaimRef == nil || got.Spec.ClaimRef.Name != "owner" || got.Status.Phase != v1.VolumeBound {
			return "PV " + describeRef(got.Spec.ClaimRef) + " phase " + string(got.Status.Phase)
		}
		if c := e.getClaim("owner"); c.Status.Phase != v1.ClaimBound {
			return "owner is " + string(c.Status.Phase)
		}
		return ""
	})
}
