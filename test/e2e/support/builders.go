package support

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Builders of the objects the suites make, with defaults plus modifiers:
// tests say only what differs.

// Claim is a ReadWriteOnce claim namespace/name of class asking for size,
// changed by mods.
func Claim(namespace, name, class, size string, mods ...func(*corev1.PersistentVolumeClaim)) *corev1.PersistentVolumeClaim {
	c := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: ptr.To(class),
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}},
		},
	}
	for _, m := range mods {
		m(c)
	}
	return c
}

// Modes sets a claim's access modes.
func Modes(modes ...corev1.PersistentVolumeAccessMode) func(*corev1.PersistentVolumeClaim) {
	return func(c *corev1.PersistentVolumeClaim) { c.Spec.AccessModes = modes }
}

// Pod is a pod namespace/name of one busybox container that mounts claim
// at /data (claim "": no volume), on node by its hostname label (node "":
// wherever the scheduler puts it).
func Pod(namespace, name, node, claim string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox:1.37"}}},
	}
	if node != "" {
		p.Spec.NodeSelector = map[string]string{"kubernetes.io/hostname": node}
	}
	if claim != "" {
		p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}
		p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	}
	return p
}

// ConditionsBesidesUnused are the claim's conditions but Unused, which
// pvc-protection keeps on every Bound claim (gate
// PersistentVolumeClaimUnusedSinceTime, on by default since v1.37): what
// a test of a resize or a modification expects to be empty once done.
func ConditionsBesidesUnused(c *corev1.PersistentVolumeClaim) []corev1.PersistentVolumeClaimCondition {
	var out []corev1.PersistentVolumeClaimCondition
	for _, cond := range c.Status.Conditions {
		if cond.Type != corev1.PersistentVolumeClaimUnused {
			out = append(out, cond)
		}
	}
	return out
}
