package binder

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/internal/binding"
)

func classBinding(name string, mode storagev1.VolumeBindingMode) *storagev1.StorageClass {
	return &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name},
		Provisioner: "kubernetes.io/no-provisioner", VolumeBindingMode: &mode}
}

// localClaim and localVolume are a claim and a PV of one RWO GiB in class.
func localClaim(class string) *v1.PersistentVolumeClaim {
	c := claimFor("c", "1Gi", rwo)
	c.Spec.StorageClassName = &class
	return c
}

func localVolume(class string) *v1.PersistentVolume {
	pv := volumeOf("pv", "1Gi", rwo)
	pv.Spec.StorageClassName = class
	return pv
}

func TestAFreeVolumeOfAnImmediateClassWakesAWaitingClaim(t *testing.T) {
	pv := localVolume("fast")
	b := newFakeBinder(t, classBinding("fast", storagev1.VolumeBindingImmediate), localClaim("fast"), pv)
	if b.offer(pv) != binding.OfferTaken {
		t.Error("the claim was not woken")
	}
}

// A free PV of a WaitForFirstConsumer class is the scheduler's to choose: no
// claim fits it, so none is woken (nor asked).
func TestAFreeVolumeOfAWaitForFirstConsumerClassWakesNoClaim(t *testing.T) {
	pv := localVolume("local")
	b := newFakeBinder(t, classBinding("local", storagev1.VolumeBindingWaitForFirstConsumer), localClaim("local"), pv)
	if b.offer(pv) == binding.OfferTaken {
		t.Error("a claim was woken for a PV only the scheduler may choose")
	}
}

// A PV pre-bound to a claim fits it whatever the class's binding mode.
func TestAPreBoundVolumeOfAWaitForFirstConsumerClassWakesItsClaim(t *testing.T) {
	pv := localVolume("local")
	pv.Spec.ClaimRef = &v1.ObjectReference{Namespace: "ns", Name: "c"}
	b := newFakeBinder(t, classBinding("local", storagev1.VolumeBindingWaitForFirstConsumer), localClaim("local"), pv)
	if b.offer(pv) != binding.OfferTaken {
		t.Error("the claim the PV names was not woken")
	}
}

// A claim deleted after its PV's claimRef named it but before it recorded
// spec.volumeName still releases that PV: the delete queues every PV whose
// claimRef names the claim, since the resync leaves Bound PVs alone.
func TestADeletedClaimQueuesTheVolumesThatNameIt(t *testing.T) {
	pv := localVolume("fast")
	claim := localClaim("fast")
	claim.UID = "claim-uid"
	pv.Spec.ClaimRef = &v1.ObjectReference{Namespace: claim.Namespace, Name: claim.Name, UID: claim.UID}
	pv.Status.Phase = v1.VolumeBound
	b := newFakeBinder(t, classBinding("fast", storagev1.VolumeBindingImmediate), claim, pv)
	for b.volumeQ.Len() > 0 {
		name, _ := b.volumeQ.Get()
		b.volumeQ.Done(name)
	}
	b.informerDeletes(t, claim)
	if b.volumeQ.Len() != 1 {
		t.Fatalf("%d volumes queued after the claim's delete, want pv", b.volumeQ.Len())
	}
	if name, _ := b.volumeQ.Get(); name != pv.Name {
		t.Errorf("queued %q, want %q", name, pv.Name)
	}
}
