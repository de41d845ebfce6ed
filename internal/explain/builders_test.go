package explain_test

import (
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	storagehelpers "k8s.io/component-helpers/storage/volume"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/explain"
)

var now = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

type pvOpt func(*v1.PersistentVolume)

// newPV is an Available RWO Filesystem volume of class "fast", Retain.
func newPV(name, size string, opts ...pvOpt) *v1.PersistentVolume {
	pv := &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)},
		Spec: v1.PersistentVolumeSpec{
			StorageClassName:              "fast",
			Capacity:                      v1.ResourceList{v1.ResourceStorage: resource.MustParse(size)},
			AccessModes:                   []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimRetain,
		},
		Status: v1.PersistentVolumeStatus{Phase: v1.VolumeAvailable},
	}
	for _, o := range opts {
		o(pv)
	}
	return pv
}

func pvPhase(p v1.PersistentVolumePhase) pvOpt {
	return func(pv *v1.PersistentVolume) { pv.Status.Phase = p }
}
func pvPolicy(p v1.PersistentVolumeReclaimPolicy) pvOpt {
	return func(pv *v1.PersistentVolume) { pv.Spec.PersistentVolumeReclaimPolicy = p }
}
func pvClaim(ns, name string, uid types.UID) pvOpt {
	return func(pv *v1.PersistentVolume) {
		pv.Spec.ClaimRef = &v1.ObjectReference{Namespace: ns, Name: name, UID: uid}
	}
}
func pvCSI(driver, handle string) pvOpt {
	return func(pv *v1.PersistentVolume) {
		pv.Spec.CSI = &v1.CSIPersistentVolumeSource{Driver: driver, VolumeHandle: handle}
	}
}
func pvDeleting(finalizers ...string) pvOpt {
	return func(pv *v1.PersistentVolume) {
		pv.DeletionTimestamp = &metav1.Time{Time: now.Add(-time.Minute)}
		pv.Finalizers = finalizers
	}
}
func pvAnn(k, v string) pvOpt {
	return func(pv *v1.PersistentVolume) { metav1.SetMetaDataAnnotation(&pv.ObjectMeta, k, v) }
}

type claimOpt func(*v1.PersistentVolumeClaim)

// newClaim is a Pending RWO Filesystem claim of class "fast" in namespace ns.
func newClaim(name, size string, opts ...claimOpt) *v1.PersistentVolumeClaim {
	c := &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name)},
		Spec: v1.PersistentVolumeClaimSpec{
			StorageClassName: ptr.To("fast"),
			AccessModes:      []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Resources:        v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse(size)}},
		},
		Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimPending},
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

func claimClass(name string) claimOpt {
	return func(c *v1.PersistentVolumeClaim) { c.Spec.StorageClassName = ptr.To(name) }
}
func claimNoClass() claimOpt {
	return func(c *v1.PersistentVolumeClaim) { c.Spec.StorageClassName = nil }
}
func claimAnn(k, v string) claimOpt {
	return func(c *v1.PersistentVolumeClaim) { metav1.SetMetaDataAnnotation(&c.ObjectMeta, k, v) }
}

// claimBoundTo makes the claim and the volume a complete bind.
func claimBoundTo(pv *v1.PersistentVolume) claimOpt {
	return func(c *v1.PersistentVolumeClaim) {
		c.Spec.VolumeName = pv.Name
		metav1.SetMetaDataAnnotation(&c.ObjectMeta, storagehelpers.AnnBindCompleted, "yes")
		c.Status.Phase = v1.ClaimBound
		c.Status.AccessModes = pv.Spec.AccessModes
		c.Status.Capacity = pv.Spec.Capacity
		pv.Spec.ClaimRef = &v1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1",
			Namespace: c.Namespace, Name: c.Name, UID: c.UID}
		pv.Status.Phase = v1.VolumeBound
	}
}
func claimDeleting() claimOpt {
	return func(c *v1.PersistentVolumeClaim) {
		c.DeletionTimestamp = &metav1.Time{Time: now.Add(-time.Minute)}
		c.Finalizers = []string{"kubernetes.io/pvc-protection"}
	}
}

func newClass(name, provisioner string, mode storagev1.VolumeBindingMode) *storagev1.StorageClass {
	return &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: provisioner, VolumeBindingMode: &mode}
}

// newPod is a pod of namespace ns using claim, on node ("" unscheduled).
func newPod(name, node, claim string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"},
		Spec: v1.PodSpec{NodeName: node, Volumes: []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{
			PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}},
		Status: v1.PodStatus{Phase: v1.PodRunning},
	}
}

func facts() *explain.Facts {
	return &explain.Facts{Now: now, Classes: []*storagev1.StorageClass{
		newClass("fast", "csi.example.com", storagev1.VolumeBindingImmediate),
		newClass("late", "csi.example.com", storagev1.VolumeBindingWaitForFirstConsumer),
		newClass("manual", "kubernetes.io/no-provisioner", storagev1.VolumeBindingImmediate),
	}}
}
