package binding_test

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	storagehelpers "k8s.io/component-helpers/storage/volume"

	"github.com/volplane/volplane/internal/binding"
)

func TestBindVolumeSpec(t *testing.T) {
	claim := newClaim("c", "1Gi")
	t.Run("a free volume gets a full claimRef and bound-by-controller", func(t *testing.T) {
		pv := newPV("pv1", "1Gi")
		out := binding.BindVolumeSpec(pv, claim)
		want := &v1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: "default",
			Name: "c", UID: claim.UID, ResourceVersion: claim.ResourceVersion}
		if !reflect.DeepEqual(out.Spec.ClaimRef, want) {
			t.Errorf("claimRef %+v, want %+v", out.Spec.ClaimRef, want)
		}
		if out.Annotations[storagehelpers.AnnBoundByController] != "yes" {
			t.Errorf("annotations %v, want bound-by-controller", out.Annotations)
		}
		if pv.Spec.ClaimRef != nil || pv.Annotations != nil {
			t.Errorf("input modified: %+v", pv)
		}
	})
	t.Run("a volume the user pre-bound gets the UID but no bound-by-controller", func(t *testing.T) {
		out := binding.BindVolumeSpec(newPV("pv1", "1Gi", preBoundTo("default", "c")), claim)
		if out.Spec.ClaimRef.UID != claim.UID {
			t.Errorf("claimRef %+v, want uid %s", out.Spec.ClaimRef, claim.UID)
		}
		if _, ok := out.Annotations[storagehelpers.AnnBoundByController]; ok {
			t.Errorf("bound-by-controller set on a user pre-bound volume")
		}
	})
	t.Run("an already bound volume needs no write", func(t *testing.T) {
		if out := binding.BindVolumeSpec(newPV("pv1", "1Gi", boundTo("default", "c")), claim); out != nil {
			t.Errorf("want nil, got %+v", out.Spec.ClaimRef)
		}
	})
}

func TestBindClaimSpec(t *testing.T) {
	pv := newPV("pv1", "1Gi")
	t.Run("the controller sets volumeName and says so", func(t *testing.T) {
		out := binding.BindClaimSpec(newClaim("c", "1Gi"), pv)
		if out.Spec.VolumeName != "pv1" || out.Annotations[storagehelpers.AnnBoundByController] != "yes" ||
			out.Annotations[storagehelpers.AnnBindCompleted] != "yes" {
			t.Errorf("got volumeName %q annotations %v", out.Spec.VolumeName, out.Annotations)
		}
	})
	t.Run("a claim the user pointed at the volume only gets bind-completed", func(t *testing.T) {
		out := binding.BindClaimSpec(newClaim("c", "1Gi", claimVolume("pv1")), pv)
		if _, ok := out.Annotations[storagehelpers.AnnBoundByController]; ok || out.Annotations[storagehelpers.AnnBindCompleted] != "yes" {
			t.Errorf("annotations %v", out.Annotations)
		}
	})
	t.Run("a complete claim needs no write", func(t *testing.T) {
		if out := binding.BindClaimSpec(newClaim("c", "1Gi", claimVolume("pv1"), bindCompleted()), pv); out != nil {
			t.Errorf("want nil, got %v", out.Annotations)
		}
	})
}

func TestBindClaimStatus(t *testing.T) {
	pv := newPV("pv1", "5Gi", withModes(RWO, ROX), withVAC("fast"))
	t.Run("a Pending claim takes phase, modes, capacity and attributes class from the volume", func(t *testing.T) {
		out := binding.BindClaimStatus(newClaim("c", "1Gi"), pv)
		s := out.Status
		if s.Phase != v1.ClaimBound || !reflect.DeepEqual(s.AccessModes, pv.Spec.AccessModes) ||
			!s.Capacity.Storage().Equal(resource.MustParse("5Gi")) || *s.CurrentVolumeAttributesClassName != "fast" {
			t.Errorf("status %+v", s)
		}
	})
	t.Run("a Bound claim keeps a capacity that differs on purpose", func(t *testing.T) {
		claim := newClaim("c", "1Gi", claimPhase(v1.ClaimBound))
		claim.Status.AccessModes = pv.Spec.AccessModes
		claim.Status.Capacity = v1.ResourceList{v1.ResourceStorage: resource.MustParse("4Gi")}
		if out := binding.BindClaimStatus(claim, pv); out != nil {
			t.Errorf("want nil, got %+v", out.Status)
		}
	})
	t.Run("a pending filesystem resize reports the pre-resize capacity", func(t *testing.T) {
		resizing := newPV("pv1", "5Gi", withAnn(binding.AnnPreResizeCapacity, "3Gi"))
		out := binding.BindClaimStatus(newClaim("c", "1Gi", claimPhase(v1.ClaimLost)), resizing)
		if !out.Status.Capacity.Storage().Equal(resource.MustParse("3Gi")) {
			t.Errorf("capacity %v, want 3Gi", out.Status.Capacity)
		}
	})
}

// TestBindSurvivesACrashAfterAnyStep: stop the four writes after any number
// of steps, then run a fresh bind on what was written. The result equals an
// uninterrupted bind, and the steps already done are skipped (return nil).
func TestBindSurvivesACrashAfterAnyStep(t *testing.T) {
	wantPV, wantClaim := bindAll(newPV("pv1", "2Gi"), newClaim("c", "1Gi"), 4)
	for crashAfter := 0; crashAfter <= 4; crashAfter++ {
		pv, claim := bindAll(newPV("pv1", "2Gi"), newClaim("c", "1Gi"), crashAfter)
		// The next claim sync finds the half-bound volume as its match.
		d := binding.DecideClaim(binding.ClaimInput{Claim: claim, Match: pv, Volume: pv})
		if d.Action != binding.ClaimBind || d.Volume.Name != "pv1" {
			t.Fatalf("crash after %d: next sync decides %s", crashAfter, d)
		}
		pv, claim = bindAll(pv, claim, 4)
		if !equality.Semantic.DeepEqual(pv, wantPV) || !equality.Semantic.DeepEqual(claim, wantClaim) {
			t.Errorf("crash after %d: resumed bind differs\npv %+v\nclaim %+v", crashAfter, pv, claim)
		}
		if binding.BindVolumeSpec(pv, claim) != nil || binding.BindVolumeStatus(pv) != nil ||
			binding.BindClaimSpec(claim, pv) != nil || binding.BindClaimStatus(claim, pv) != nil {
			t.Errorf("crash after %d: a completed bind still wants writes", crashAfter)
		}
	}
}

// bindAll applies the first n bind steps, as the controller would.
func bindAll(pv *v1.PersistentVolume, claim *v1.PersistentVolumeClaim, n int) (*v1.PersistentVolume, *v1.PersistentVolumeClaim) {
	steps := []func(){
		func() { pv = orPV(binding.BindVolumeSpec(pv, claim), pv) },
		func() { pv = orPV(binding.BindVolumeStatus(pv), pv) },
		func() { claim = orClaim(binding.BindClaimSpec(claim, pv), claim) },
		func() { claim = orClaim(binding.BindClaimStatus(claim, pv), claim) },
	}
	for _, step := range steps[:n] {
		step()
	}
	return pv, claim
}

func orPV(a, b *v1.PersistentVolume) *v1.PersistentVolume {
	if a != nil {
		return a
	}
	return b
}

func orClaim(a, b *v1.PersistentVolumeClaim) *v1.PersistentVolumeClaim {
	if a != nil {
		return a
	}
	return b
}

func TestSetClaimPhaseClearsWhatOnlyABoundClaimReports(t *testing.T) {
	claim := newClaim("c", "1Gi", claimPhase(v1.ClaimBound))
	claim.Status.AccessModes = []v1.PersistentVolumeAccessMode{RWO}
	claim.Status.Capacity = v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}
	out := binding.SetClaimPhase(claim, v1.ClaimLost)
	if out.Status.Phase != v1.ClaimLost || out.Status.AccessModes != nil || out.Status.Capacity != nil {
		t.Errorf("status %+v", out.Status)
	}
	if binding.SetClaimPhase(out, v1.ClaimLost) != nil {
		t.Errorf("a second SetClaimPhase wants a write")
	}
}

func TestUnbindVolumeSpec(t *testing.T) {
	t.Run("controller-bound: claimRef and annotation go", func(t *testing.T) {
		out := binding.UnbindVolumeSpec(newPV("pv1", "1Gi", boundTo("default", "c"), controllerBound()))
		if out.Spec.ClaimRef != nil || out.Annotations != nil {
			t.Errorf("claimRef %+v annotations %v", out.Spec.ClaimRef, out.Annotations)
		}
	})
	t.Run("user pre-bound: only the UID goes", func(t *testing.T) {
		out := binding.UnbindVolumeSpec(newPV("pv1", "1Gi", boundTo("default", "c")))
		if out.Spec.ClaimRef == nil || out.Spec.ClaimRef.Name != "c" || out.Spec.ClaimRef.UID != "" {
			t.Errorf("claimRef %+v", out.Spec.ClaimRef)
		}
		if binding.UnbindVolumeSpec(out) != nil {
			t.Errorf("a second unbind wants a write")
		}
	})
}

func TestSetClaimProvisionerSetsBothAnnotations(t *testing.T) {
	out := binding.SetClaimProvisioner(newClaim("c", "1Gi", claimAnn(storagehelpers.AnnStorageProvisioner, "p")), "p")
	if out == nil || out.Annotations[storagehelpers.AnnBetaStorageProvisioner] != "p" {
		t.Fatalf("beta annotation not added: %v", out)
	}
	if binding.SetClaimProvisioner(out, "p") != nil {
		t.Errorf("a second SetClaimProvisioner wants a write")
	}
}

func TestSetVolumePhaseComparesThePhaseOnly(t *testing.T) {
	pv := newPV("pv1", "1Gi")
	if binding.SetVolumePhase(pv, v1.VolumeAvailable, "new message") != nil {
		t.Errorf("same phase wants a write")
	}
	out := binding.SetVolumePhase(pv, v1.VolumeFailed, "boom")
	if out.Status.Phase != v1.VolumeFailed || out.Status.Message != "boom" || pv.Status.Phase != v1.VolumeAvailable {
		t.Errorf("got %+v (input %+v)", out.Status, pv.Status)
	}
}

// A decision that leaves the phase alone (Phase "") must not write it: the
// API server would default an empty phase to Pending.
func TestSetVolumePhaseLeavesThePhaseAloneWhenEmpty(t *testing.T) {
	pv := newPV("pv1", "1Gi")
	pv.Status.Phase = v1.VolumeReleased
	if out := binding.SetVolumePhase(pv, "", ""); out != nil {
		t.Errorf("empty phase wants a write: %+v", out.Status)
	}
}

// A bind decided earlier holds only while the newest copy of its volume is
// free or already the claim's, and no other claim has reserved it.
func TestBindStillHolds(t *testing.T) {
	claim := newClaim("c", "1Gi")
	for _, c := range []struct {
		name       string
		pv         *v1.PersistentVolume
		reservedBy string
		holds      bool
	}{
		{"free", newPV("pv1", "1Gi"), "", true},
		{"reserved by the claim", newPV("pv1", "1Gi"), "default/c", true},
		{"reserved by another", newPV("pv1", "1Gi"), "default/other", false},
		{"bound to the claim", newPV("pv1", "1Gi", boundTo("default", "c")), "", true},
		{"taken by another", newPV("pv1", "1Gi", boundTo("default", "other")), "", false},
	} {
		err := binding.BindStillHolds(c.pv, claim, c.reservedBy)
		if (err == nil) != c.holds {
			t.Errorf("%s: %v, want holds=%v", c.name, err, c.holds)
		}
	}
}
