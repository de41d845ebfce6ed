package protection

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// Builders with the defaults of the reference's tests: claim pvc1 and pod
// pod1 (uid1) in namespace default, the pod scheduled on node1 and Pending.

func claim(mods ...func(*v1.PersistentVolumeClaim)) *v1.PersistentVolumeClaim {
	c := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "pvc1", Namespace: "default", UID: "claim-uid"}}
	for _, m := range mods {
		m(c)
	}
	return c
}

func named(name string) func(*v1.PersistentVolumeClaim) {
	return func(c *v1.PersistentVolumeClaim) { c.Name = name }
}

func protected(c *v1.PersistentVolumeClaim) { c.Finalizers = append(c.Finalizers, ClaimFinalizer) }
func deleting(c *v1.PersistentVolumeClaim)  { c.DeletionTimestamp = &metav1.Time{} }

// ownedBy makes the claim controlled by the pod, as the ephemeral volume
// controller makes it.
func ownedBy(p *v1.Pod) func(*v1.PersistentVolumeClaim) {
	return func(c *v1.PersistentVolumeClaim) {
		c.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: p.Name, UID: p.UID, Controller: ptr.To(true)}}
	}
}

func pod(mods ...func(*v1.Pod)) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "pod1", Namespace: "default", UID: "uid1"},
		Spec:       v1.PodSpec{NodeName: "node1"},
		Status:     v1.PodStatus{Phase: v1.PodPending},
	}
	for _, m := range mods {
		m(p)
	}
	return p
}

func withClaim(name string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: name,
			VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: name}}})
	}
}

// withEphemeral adds a generic ephemeral volume; its claim is "pod1-<vol>".
func withEphemeral(vol string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: vol,
			VolumeSource: v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{}}})
	}
}

func withEmptyDir(p *v1.Pod) {
	p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: "emptyDir", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}})
}

func unscheduled(p *v1.Pod) { p.Spec.NodeName = "" }

func phase(ph v1.PodPhase) func(*v1.Pod) { return func(p *v1.Pod) { p.Status.Phase = ph } }

func inNamespace(ns string) func(*v1.Pod) { return func(p *v1.Pod) { p.Namespace = ns } }

func podUID(uid types.UID) func(*v1.Pod) { return func(p *v1.Pod) { p.UID = uid } }

// podDeleting sets a deletion timestamp with the given grace period; 0 is a
// pod the kubelet is done with (or a forced deletion).
func podDeleting(grace int64) func(*v1.Pod) {
	return func(p *v1.Pod) {
		p.DeletionTimestamp = &metav1.Time{}
		p.DeletionGracePeriodSeconds = ptr.To(grace)
	}
}

func running(p *v1.Pod) {
	p.Status.Phase = v1.PodRunning
	p.Status.ContainerStatuses = []v1.ContainerStatus{{Name: "app", State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}}
}

func pods(ps ...*v1.Pod) []*v1.Pod { return ps }
