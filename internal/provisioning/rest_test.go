package provisioning

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	volumehelpers "k8s.io/component-helpers/storage/volume"
	"k8s.io/utils/ptr"
)

// A claim or PV at rest is decided on with nothing to do whatever
// surrounds it: every class (none, another driver's, ours, Immediate or
// WaitForFirstConsumer), driver served or not, PV made or not.
func FuzzAtRestMeansNothingToDo(f *testing.F) {
	f.Add(uint16(0), "csi.example.com")
	f.Add(uint16(0xffff), "csi.example.com")
	f.Fuzz(func(t *testing.T, bits uint16, driver string) {
		bit := func(i int) bool { return bits&(1<<i) != 0 }
		claim := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", UID: "uid-c",
			Annotations: map[string]string{volumehelpers.AnnStorageProvisioner: driver}}}
		claim.Spec.StorageClassName = ptr.To("class")
		if bit(0) {
			claim.Finalizers = []string{ClaimFinalizer}
		}
		if bit(1) {
			claim.Spec.VolumeName = VolumeName(claim)
		} else if bit(2) {
			claim.Spec.VolumeName = "elsewhere"
		}
		claim.Status.Phase = []v1.PersistentVolumeClaimPhase{"", v1.ClaimPending, v1.ClaimBound, v1.ClaimLost}[bits>>3&3]
		if bit(5) {
			claim.DeletionTimestamp = ptr.To(metav1.Now())
		}
		if bit(6) {
			claim.Annotations[volumehelpers.AnnSelectedNode] = "node-1"
		}
		mode := storagev1.VolumeBindingImmediate
		if bit(7) {
			mode = storagev1.VolumeBindingWaitForFirstConsumer
		}
		classes := []*storagev1.StorageClass{nil,
			{ObjectMeta: metav1.ObjectMeta{Name: "class"}, Provisioner: driver, VolumeBindingMode: &mode},
			{ObjectMeta: metav1.ObjectMeta{Name: "class"}, Provisioner: "other", VolumeBindingMode: &mode}}
		if ClaimAtRest(claim) {
			for _, class := range classes {
				for _, serves := range []bool{false, true} {
					for _, made := range []bool{false, true} {
						f := ClaimFacts{Claim: claim, Class: class, Serves: func(string) bool { return serves }, PVExists: made}
						if a := DecideClaim(f); a != ClaimNone {
							t.Fatalf("claim at rest %+v decided %s (class %v, served %v, PV made %v)", claim, a, class, serves, made)
						}
					}
				}
			}
		}

		pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv",
			Annotations: map[string]string{volumehelpers.AnnDynamicallyProvisioned: driver}}}
		pv.Spec.CSI = &v1.CSIPersistentVolumeSource{Driver: driver, VolumeHandle: "h"}
		pv.Spec.PersistentVolumeReclaimPolicy = []v1.PersistentVolumeReclaimPolicy{v1.PersistentVolumeReclaimDelete,
			v1.PersistentVolumeReclaimRetain, v1.PersistentVolumeReclaimRecycle, ""}[bits>>8&3]
		pv.Status.Phase = []v1.PersistentVolumePhase{v1.VolumeAvailable, v1.VolumeBound, v1.VolumeReleased, v1.VolumeFailed}[bits>>10&3]
		if bit(12) {
			pv.Finalizers = []string{VolumeFinalizer}
		}
		if bit(13) {
			pv.DeletionTimestamp = ptr.To(metav1.Now())
		}
		if VolumeAtRest(pv) {
			for _, serves := range []bool{false, true} {
				if a := DecideVolume(pv, func(string) bool { return serves }); a != VolumeNone {
					t.Fatalf("PV at rest %+v decided %v (served %v)", pv, a, serves)
				}
			}
		}
	})
}

// The common cases: a bound claim and a Bound PV of ours are at rest; a
// claim waiting for a volume, or being provisioned, and a Released PV to
// delete are not.
func TestAtRest(t *testing.T) {
	bound := &v1.PersistentVolumeClaim{Spec: v1.PersistentVolumeClaimSpec{VolumeName: "pv"}, Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound}}
	pending := &v1.PersistentVolumeClaim{Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimPending}}
	provisioning := bound.DeepCopy()
	provisioning.Finalizers = []string{ClaimFinalizer}
	if !ClaimAtRest(bound) || ClaimAtRest(pending) || ClaimAtRest(provisioning) {
		t.Errorf("bound %v, pending %v, provisioning %v: want true, false, false", ClaimAtRest(bound), ClaimAtRest(pending), ClaimAtRest(provisioning))
	}
	pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Finalizers: []string{VolumeFinalizer},
		Annotations: map[string]string{volumehelpers.AnnDynamicallyProvisioned: "d"}},
		Spec: v1.PersistentVolumeSpec{PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimDelete,
			PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: "d", VolumeHandle: "h"}}},
		Status: v1.PersistentVolumeStatus{Phase: v1.VolumeBound}}
	released := pv.DeepCopy()
	released.Status.Phase = v1.VolumeReleased
	if !VolumeAtRest(pv) || VolumeAtRest(released) {
		t.Errorf("bound PV %v, released PV %v: want true, false", VolumeAtRest(pv), VolumeAtRest(released))
	}
}
