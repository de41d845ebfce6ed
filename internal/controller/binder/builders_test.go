package binder

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The builders of the controller's tests; package index's waiting tests
// have the same ones for its own.

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

// pending makes pv new: no phase written yet.
func pending(pv *v1.PersistentVolume) *v1.PersistentVolume {
	pv.Status.Phase = v1.VolumePending
	return pv
}

// claimFor is a waiting claim of class gold asking for size and modes.
func claimFor(name, size string, modes ...v1.PersistentVolumeAccessMode) *v1.PersistentVolumeClaim {
	c := pendingClaim(name, "gold")
	c.Spec.AccessModes = modes
	c.Spec.Resources.Requests = v1.ResourceList{v1.ResourceStorage: resource.MustParse(size)}
	return c
}

// volumeOf is a free PV of class gold holding size and offering modes.
func volumeOf(name, size string, modes ...v1.PersistentVolumeAccessMode) *v1.PersistentVolume {
	pv := freeVolume(name, "gold")
	pv.Spec.AccessModes = modes
	pv.Spec.Capacity = v1.ResourceList{v1.ResourceStorage: resource.MustParse(size)}
	return pv
}

const rwo = v1.ReadWriteOnce
