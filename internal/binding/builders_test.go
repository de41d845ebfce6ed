package binding_test

import (
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Short names for access modes keep the tables readable.
const (
	RWO  = v1.ReadWriteOnce
	ROX  = v1.ReadOnlyMany
	RWX  = v1.ReadWriteMany
	RWOP = v1.ReadWriteOncePod
)

type pvOpt func(*v1.PersistentVolume)

// newPV builds an Available, unclaimed RWO Filesystem PV with no class and
// policy Retain; options change one thing each.
func newPV(name, size string, opts ...pvOpt) *v1.PersistentVolume {
	pv := &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("pv-uid-" + name), ResourceVersion: "1"},
		Spec: v1.PersistentVolumeSpec{
			Capacity:                      v1.ResourceList{v1.ResourceStorage: resource.MustParse(size)},
			AccessModes:                   []v1.PersistentVolumeAccessMode{RWO},
			PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimRetain,
		},
		Status: v1.PersistentVolumeStatus{Phase: v1.VolumeAvailable},
	}
	for _, o := range opts {
		o(pv)
	}
	return pv
}

func withClass(c string) pvOpt { return func(pv *v1.PersistentVolume) { pv.Spec.StorageClassName = c } }
func withBetaClass(c string) pvOpt {
	return func(pv *v1.PersistentVolume) { setAnn(&pv.ObjectMeta, v1.BetaStorageClassAnnotation, c) }
}
func withModes(m ...v1.PersistentVolumeAccessMode) pvOpt {
	return func(pv *v1.PersistentVolume) { pv.Spec.AccessModes = m }
}
func withPhase(p v1.PersistentVolumePhase) pvOpt {
	return func(pv *v1.PersistentVolume) { pv.Status.Phase = p }
}
func withBlock() pvOpt {
	return func(pv *v1.PersistentVolume) { m := v1.PersistentVolumeBlock; pv.Spec.VolumeMode = &m }
}
func withFilesystem() pvOpt {
	return func(pv *v1.PersistentVolume) { m := v1.PersistentVolumeFilesystem; pv.Spec.VolumeMode = &m }
}
func withVAC(c string) pvOpt {
	return func(pv *v1.PersistentVolume) { pv.Spec.VolumeAttributesClassName = &c }
}
func withLabels(kv ...string) pvOpt {
	return func(pv *v1.PersistentVolume) {
		pv.Labels = map[string]string{}
		for i := 0; i+1 < len(kv); i += 2 {
			pv.Labels[kv[i]] = kv[i+1]
		}
	}
}
func withPolicy(p v1.PersistentVolumeReclaimPolicy) pvOpt {
	return func(pv *v1.PersistentVolume) { pv.Spec.PersistentVolumeReclaimPolicy = p }
}
func withAnn(k, v string) pvOpt {
	return func(pv *v1.PersistentVolume) { setAnn(&pv.ObjectMeta, k, v) }
}
func withCSI(driver string) pvOpt {
	return func(pv *v1.PersistentVolume) {
		pv.Spec.CSI = &v1.CSIPersistentVolumeSource{Driver: driver, VolumeHandle: "h-" + pv.Name}
	}
}
func deleting() pvOpt {
	return func(pv *v1.PersistentVolume) { now := metav1.Now(); pv.DeletionTimestamp = &now }
}

// preBoundTo reserves the PV for a claim by name only (no UID), as users do.
func preBoundTo(ns, name string) pvOpt {
	return func(pv *v1.PersistentVolume) {
		pv.Spec.ClaimRef = &v1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: ns, Name: name}
	}
}

// boundTo points the PV at a claim with its UID.
func boundTo(ns, name string) pvOpt {
	return func(pv *v1.PersistentVolume) {
		pv.Spec.ClaimRef = &v1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: ns, Name: name, UID: claimUID(name)}
	}
}

// boundToUID points the PV at a claim name with an explicit UID.
func boundToUID(ns, name string, uid types.UID) pvOpt {
	return func(pv *v1.PersistentVolume) {
		pv.Spec.ClaimRef = &v1.ObjectReference{Kind: "PersistentVolumeClaim", Namespace: ns, Name: name, UID: uid}
	}
}

type claimOpt func(*v1.PersistentVolumeClaim)

func claimUID(name string) types.UID { return types.UID("uid-" + name) }

// newClaim builds a Pending RWO claim in namespace "default" with no class.
func newClaim(name, size string, opts ...claimOpt) *v1.PersistentVolumeClaim {
	c := &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: claimUID(name), ResourceVersion: "7"},
		Spec: v1.PersistentVolumeClaimSpec{
			AccessModes: []v1.PersistentVolumeAccessMode{RWO},
			Resources: v1.VolumeResourceRequirements{
				Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse(size)},
			},
		},
		Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimPending},
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

func claimClass(cl string) claimOpt {
	return func(c *v1.PersistentVolumeClaim) { c.Spec.StorageClassName = &cl }
}
func claimBetaClass(cl string) claimOpt {
	return func(c *v1.PersistentVolumeClaim) { setAnn(&c.ObjectMeta, v1.BetaStorageClassAnnotation, cl) }
}
func claimModes(m ...v1.PersistentVolumeAccessMode) claimOpt {
	return func(c *v1.PersistentVolumeClaim) { c.Spec.AccessModes = m }
}
func claimBlock() claimOpt {
	return func(c *v1.PersistentVolumeClaim) { m := v1.PersistentVolumeBlock; c.Spec.VolumeMode = &m }
}
func claimVAC(cl string) claimOpt {
	return func(c *v1.PersistentVolumeClaim) { c.Spec.VolumeAttributesClassName = &cl }
}
func claimSelector(kv ...string) claimOpt {
	return func(c *v1.PersistentVolumeClaim) {
		sel := &metav1.LabelSelector{MatchLabels: map[string]string{}}
		for i := 0; i+1 < len(kv); i += 2 {
			sel.MatchLabels[kv[i]] = kv[i+1]
		}
		c.Spec.Selector = sel
	}
}
func claimVolume(pv string) claimOpt {
	return func(c *v1.PersistentVolumeClaim) { c.Spec.VolumeName = pv }
}
func claimAnn(k, v string) claimOpt {
	return func(c *v1.PersistentVolumeClaim) { setAnn(&c.ObjectMeta, k, v) }
}
func claimPhase(p v1.PersistentVolumeClaimPhase) claimOpt {
	return func(c *v1.PersistentVolumeClaim) { c.Status.Phase = p }
}
func setAnn(m *metav1.ObjectMeta, k, v string) {
	if m.Annotations == nil {
		m.Annotations = map[string]string{}
	}
	m.Annotations[k] = v
}

type classOpt func(*storagev1.StorageClass)

// newClass builds an Immediate class with the given provisioner.
func newClass(name, provisioner string, opts ...classOpt) *storagev1.StorageClass {
	mode := storagev1.VolumeBindingImmediate
	c := &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: name},
		Provisioner:       provisioner,
		VolumeBindingMode: &mode,
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

func waitForConsumer() classOpt {
	return func(c *storagev1.StorageClass) {
		m := storagev1.VolumeBindingWaitForFirstConsumer
		c.VolumeBindingMode = &m
	}
}
func isDefault(ann string) classOpt {
	return func(c *storagev1.StorageClass) { setAnn(&c.ObjectMeta, ann, "true") }
}
func createdAt(sec int64) classOpt {
	return func(c *storagev1.StorageClass) { c.CreationTimestamp = metav1.NewTime(time.Unix(sec, 0)) }
}

type podOpt func(*v1.Pod)

func newPod(name string, opts ...podOpt) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Status: v1.PodStatus{Phase: v1.PodPending}}
	for _, o := range opts {
		o(p)
	}
	return p
}

func onNode(n string) podOpt { return func(p *v1.Pod) { p.Spec.NodeName = n } }
func podSucceeded() podOpt   { return func(p *v1.Pod) { p.Status.Phase = v1.PodSucceeded } }

func metav1LabelSelectorRequirement(key, op string) metav1.LabelSelectorRequirement {
	return metav1.LabelSelectorRequirement{Key: key, Operator: metav1.LabelSelectorOperator(op)}
}
