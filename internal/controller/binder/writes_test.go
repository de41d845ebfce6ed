package binder

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/volplane/volplane/internal/binding"
)

func pendingPV(name string) *v1.PersistentVolume {
	pv := freeVolume(name, "")
	pv.UID = types.UID("uid-" + name)
	pv.ResourceVersion = "1"
	pv.Spec.AccessModes = []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}
	pv.Status.Phase = v1.VolumePending
	return pv
}

// The answer to a PV write can reach the binder after the informer has
// delivered the PV's delete. Recording it then would put a deleted PV back
// into the index, where claims would keep choosing it.
func TestVolumeWriteAnsweredAfterTheVolumeIsDeletedDoesNotBringItBack(t *testing.T) {
	pv := pendingPV("pv1")
	b := newFakeBinder(t, pv)
	if b.index.Get("pv1") == nil {
		t.Fatal("setup: the informer's add did not index the PV")
	}
	b.duringNext("update", "persistentvolumes", func() { b.informerDeletes(t, pv) })

	if _, err := b.updateVolumeStatusOr(ctx, pv, binding.SetVolumePhase(pv, v1.VolumeAvailable, "")); err != nil {
		t.Fatal(err)
	}
	if got := b.index.Get("pv1"); got != nil {
		t.Errorf("deleted PV back in the index (phase %s)", got.Status.Phase)
	}
	if _, held := b.newPV.Get("pv1"); held {
		t.Error("deleted PV back among the newest copies")
	}
	claim := pendingClaim("c", "")
	claim.Spec.AccessModes = pv.Spec.AccessModes
	claim.Spec.Resources.Requests = v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}
	if got := b.index.FindBest(claim, false); got != nil {
		t.Errorf("a claim was offered the deleted PV %s", got.Name)
	}
}

// The same write, answered while the PV still exists, is recorded: the next
// sync works from it, not from the older informer copy.
func TestVolumeWriteIsRecordedAsTheNewestCopy(t *testing.T) {
	pv := pendingPV("pv1")
	b := newFakeBinder(t, pv)
	if _, err := b.updateVolumeStatusOr(ctx, pv, binding.SetVolumePhase(pv, v1.VolumeAvailable, "")); err != nil {
		t.Fatal(err)
	}
	if got := b.index.Get("pv1"); got == nil || got.Status.Phase != v1.VolumeAvailable {
		t.Errorf("index holds %v, want the PV written Available", got)
	}
	if got, err := b.volume("pv1"); err != nil || got.Status.Phase != v1.VolumeAvailable {
		t.Errorf("volume() read %v, %v; want our Available write over the informer's Pending copy", got, err)
	}
}

// A claim written while it is being deleted must not come back into the
// waiting claims (which free PVs are offered to) or the newest copies.
func TestClaimWriteAnsweredAfterTheClaimIsDeletedDoesNotBringItBack(t *testing.T) {
	claim := pendingClaim("c", "gold")
	claim.ResourceVersion = "1"
	b := newFakeBinder(t, claim)
	if !b.waiting.Has("ns/c") {
		t.Fatal("setup: the informer's add did not make the claim wait")
	}
	b.duringNext("update", "persistentvolumeclaims", func() { b.informerDeletes(t, claim) })

	if _, err := b.updateClaimStatusOr(ctx, claim, binding.SetClaimPhase(claim, v1.ClaimPending)); err != nil {
		t.Fatal(err)
	}
	if b.waiting.Has("ns/c") {
		t.Error("deleted claim back among the waiting claims")
	}
	if _, held := b.newClaim.Get("ns/c"); held {
		t.Error("deleted claim back among the newest copies")
	}
}

// Every write helper returns the copy the caller holds when there is
// nothing to write, never nil (callers chain steps on it).
func TestWriteHelpersReturnWhatTheCallerHoldsForANoOp(t *testing.T) {
	pv := pendingPV("pv1")
	claim := pendingClaim("c", "gold")
	b := newFakeBinder(t, pv, claim)
	if got, err := b.updateVolumeOr(ctx, pv, nil); got != pv || err != nil {
		t.Errorf("updateVolumeOr: %v, %v", got, err)
	}
	if got, err := b.updateVolumeStatusOr(ctx, pv, nil); got != pv || err != nil {
		t.Errorf("updateVolumeStatusOr: %v, %v", got, err)
	}
	if got, err := b.updateClaimOr(ctx, claim, nil); got != claim || err != nil {
		t.Errorf("updateClaimOr: %v, %v", got, err)
	}
	if got, err := b.updateClaimStatusOr(ctx, claim, nil); got != claim || err != nil {
		t.Errorf("updateClaimStatusOr: %v, %v", got, err)
	}
	if n := len(b.client.Actions()); n != 0 {
		t.Errorf("%d API calls for no-ops, want none", n)
	}
}
