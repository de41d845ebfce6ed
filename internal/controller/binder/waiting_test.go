package binder

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func pendingClaim(name, class string) *v1.PersistentVolumeClaim {
	return &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name)},
		Spec:       v1.PersistentVolumeClaimSpec{StorageClassName: &class},
	}
}

func freeVolume(name, class string) *v1.PersistentVolume {
	return &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PersistentVolumeSpec{StorageClassName: class,
			Capacity: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}},
		Status: v1.PersistentVolumeStatus{Phase: v1.VolumeAvailable},
	}
}

func always(*v1.PersistentVolumeClaim) bool { return true }

func TestAFreeVolumeWakesTheOldestWaitingClaimOfItsClass(t *testing.T) {
	w := newWaitingClaims()
	w.update(pendingClaim("first", "gold"))
	w.update(pendingClaim("second", "gold"))
	w.update(pendingClaim("other-class", "silver"))
	if key, ok := w.wake(freeVolume("pv1", "gold"), always); !ok || key != "ns/first" {
		t.Fatalf("pv1 woke %q, %v; want ns/first", key, ok)
	}
	if key, _ := w.wake(freeVolume("pv2", "gold"), always); key != "ns/second" {
		t.Errorf("pv2 woke %q, want ns/second: a woken claim is not woken twice while others wait", key)
	}
	if key, _ := w.wake(freeVolume("pv1", "gold"), always); key != "ns/first" {
		t.Errorf("waking again with pv1 gave %q, want the same claim", key)
	}
	if _, ok := w.wake(freeVolume("pv3", "bronze"), always); ok {
		t.Error("a PV of a class nobody waits for woke a claim")
	}
}

func TestAVolumeFallsBackToABusyClaimRatherThanNone(t *testing.T) {
	w := newWaitingClaims()
	w.update(pendingClaim("only", "gold"))
	w.wake(freeVolume("pv1", "gold"), always)
	if key, ok := w.wake(freeVolume("pv2", "gold"), always); !ok || key != "ns/only" {
		t.Fatalf("pv2 woke %q, %v; want the busy claim ns/only", key, ok)
	}
	got := w.release("ns/only")
	if len(got) != 2 {
		t.Errorf("release returned %v, want both PVs back", got)
	}
	if key, _ := w.wake(freeVolume("pv2", "gold"), always); key != "ns/only" {
		t.Errorf("after release the claim can be woken again, got %q", key)
	}
}

func TestClaimsThatAreNoLongerWaitingLeaveTheQueue(t *testing.T) {
	w := newWaitingClaims()
	c := pendingClaim("c", "gold")
	w.update(c)
	bound := c.DeepCopy()
	bound.Spec.VolumeName = "pv"
	w.update(bound)
	if w.has("ns/c") {
		t.Error("a claim with a volumeName is still waiting")
	}
	w.update(c)
	moved := pendingClaim("c", "silver")
	w.update(moved)
	if _, ok := w.wake(freeVolume("pv", "gold"), always); ok {
		t.Error("a claim that changed class is still offered PVs of its old class")
	}
	if key, _ := w.wake(freeVolume("pv", "silver"), always); key != "ns/c" {
		t.Errorf("claim not found under its new class, got %q", key)
	}
}

func TestADeletedVolumeStopsHoldingItsClaim(t *testing.T) {
	w := newWaitingClaims()
	w.update(pendingClaim("c", "gold"))
	w.update(pendingClaim("d", "gold"))
	w.wake(freeVolume("pv", "gold"), always)
	w.forgetVolume("pv")
	if key, _ := w.wake(freeVolume("pv2", "gold"), always); key != "ns/c" {
		t.Errorf("claim still busy after its PV was deleted: pv2 woke %q", key)
	}
}
