package conformance

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// The sizes scenarios ask for: small, since some drivers allocate what
// they are asked at once, and a growth an expansion asks.
const (
	claimSize  = "64Mi"
	biggerSize = "128Mi"
)

// claim is a claim of class asking for claimSize in the lab's first access
// mode, changed by mods.
func (s *Session) newClaim(name, class string, mods ...func(*corev1.PersistentVolumeClaim)) *corev1.PersistentVolumeClaim {
	c := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.Namespace},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: ptr.To(class),
			AccessModes:      []corev1.PersistentVolumeAccessMode{s.Lab.accessMode()},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(claimSize)}},
		},
	}
	for _, m := range mods {
		m(c)
	}
	return c
}

// accessMode is the mode the scenarios' claims ask for: the lab's first,
// ReadWriteOnce by default.
func (l *Lab) accessMode() corev1.PersistentVolumeAccessMode {
	if len(l.AccessModes) > 0 {
		return l.AccessModes[0]
	}
	return corev1.ReadWriteOnce
}

// blockMode makes a claim ask for a raw block volume.
func blockMode(c *corev1.PersistentVolumeClaim) {
	c.Spec.VolumeMode = ptr.To(corev1.PersistentVolumeBlock)
}

// fromClaim makes a claim a clone of source.
func fromClaim(source string) func(*corev1.PersistentVolumeClaim) {
	return func(c *corev1.PersistentVolumeClaim) {
		c.Spec.DataSource = &corev1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: source}
	}
}

// fromSnapshot makes a claim a restore of the VolumeSnapshot name.
func fromSnapshot(name string) func(*corev1.PersistentVolumeClaim) {
	return func(c *corev1.PersistentVolumeClaim) {
		c.Spec.DataSource = &corev1.TypedLocalObjectReference{APIGroup: ptr.To("snapshot.storage.k8s.io"), Kind: "VolumeSnapshot", Name: name}
	}
}

// labelled sets a claim's labels.
func labelled(l map[string]string) func(*corev1.PersistentVolumeClaim) {
	return func(c *corev1.PersistentVolumeClaim) { c.Labels = l }
}

// newPod is a pod of one container using claim at /data (a device at
// /dev/xvda when block), on node by its hostname label (node "": where the
// scheduler puts it).
func (s *Session) newPod(name, node, claim string, block bool) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: s.Namespace},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", Image: "busybox:1.37"}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}},
			// Deletion need not wait out a grace period no process needs.
			TerminationGracePeriodSeconds: ptr.To[int64](0),
		},
	}
	if node != "" {
		p.Spec.NodeSelector = map[string]string{corev1.LabelHostname: node}
	}
	if block {
		p.Spec.Containers[0].VolumeDevices = []corev1.VolumeDevice{{Name: "data", DevicePath: "/dev/xvda"}}
	} else {
		p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	}
	return p
}
