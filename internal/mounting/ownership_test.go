package mounting

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/utils/ptr"
)

// The kubelet's supportsFSGroup: by the pod's fsGroup, the mount's
// read-only, the driver's VOLUME_MOUNT_GROUP and the CSIDriver's policy.
func TestOwnershipIsChangedWhereTheKubeletChangesIt(t *testing.T) {
	rwx := []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}
	for _, tc := range []struct {
		name    string
		group   bool
		mod     func(w *World, p *corev1.Pod)
		want    bool
		rootMis bool
	}{
		{"no fsGroup", false, nil, false, false},
		{"default policy, RWO with fsType", true, nil, true, false},
		{"on root mismatch", true, func(_ *World, p *corev1.Pod) {
			p.Spec.SecurityContext.FSGroupChangePolicy = ptr.To(corev1.FSGroupChangeOnRootMismatch)
		}, true, true},
		{"default policy, no fsType", true, func(w *World, _ *corev1.Pod) { w.Volumes["pv-1"].Spec.CSI.FSType = "" }, false, false},
		{"default policy, RWX", true, func(w *World, _ *corev1.Pod) { w.Volumes["pv-1"].Spec.AccessModes = rwx }, false, false},
		{"File policy, RWX", true, func(w *World, _ *corev1.Pod) {
			w.Volumes["pv-1"].Spec.AccessModes = rwx
			w.CSIDrivers[local].Spec.FSGroupPolicy = ptr.To(storagev1.FileFSGroupPolicy)
		}, true, false},
		{"None policy", true, func(w *World, _ *corev1.Pod) {
			w.CSIDrivers[local].Spec.FSGroupPolicy = ptr.To(storagev1.NoneFSGroupPolicy)
		}, false, false},
		{"driver takes the group", true, func(w *World, _ *corev1.Pod) { w.Drivers[local] = Driver{Stage: true, MountGroup: true} }, false, false},
		{"read-only", true, func(_ *World, p *corev1.Pod) { p.Spec.Volumes[2].PersistentVolumeClaim.ReadOnly = true }, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := pod(podUID, "data")
			if tc.group {
				p.Spec.SecurityContext = &corev1.PodSecurityContext{FSGroup: ptr.To[int64](3000)}
			}
			w := world(local, withPods(p), func(w *World) {
				w.Volumes["pv-1"].Spec.CSI.FSType = "ext4"
				w.Volumes["pv-1"].Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}
			})
			if tc.mod != nil {
				tc.mod(&w, p)
			}
			o := w.OwnershipFor(p, Decide(w).Pods[0].Steps[0].Volume)
			if (o != nil) != tc.want || (o != nil && (o.GID != 3000 || o.OnRootMismatch != tc.rootMis)) {
				t.Errorf("ownership %+v, want %v (on root mismatch %v)", o, tc.want, tc.rootMis)
			}
		})
	}
}
