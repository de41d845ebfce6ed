package mounting

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// Ownership is the kubelet's fsGroup change of a published volume: every
// file and directory under the target path gets the group GID and group
// read-write (directories also setgid and group search), unless
// OnRootMismatch and the root already has them.
type Ownership struct {
	GID            int64
	OnRootMismatch bool
}

// OwnershipFor says whether the agent changes the ownership of v's
// publication for pod, as the kubelet's SetUp does when the driver cannot
// take the fsGroup itself (no VOLUME_MOUNT_GROUP): the pod has an fsGroup,
// the mount is read-write, and the CSIDriver's fsGroupPolicy allows it
// (File always; ReadWriteOnceWithFSType, the default and what a missing
// CSIDriver means, only for a PV with an fsType and ReadWriteOnce among its
// access modes; None never). A block volume has no files to change.
func (w World) OwnershipFor(pod *corev1.Pod, v *Volume) *Ownership {
	sc := pod.Spec.SecurityContext
	if sc == nil || sc.FSGroup == nil || v.ReadOnly || v.Block || w.Drivers[v.Driver].MountGroup {
		return nil
	}
	policy := storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy
	if d := w.CSIDrivers[v.Driver]; d != nil && d.Spec.FSGroupPolicy != nil && *d.Spec.FSGroupPolicy != "" {
		policy = *d.Spec.FSGroupPolicy
	}
	switch policy {
	case storagev1.NoneFSGroupPolicy:
		return nil
	case storagev1.FileFSGroupPolicy:
	default:
		if v.Inline != nil {
			// An inline volume is mounted ReadWriteOnce: its fsType alone
			// decides (the kubelet's supportsFSGroup).
			if v.Inline.FSType == nil || *v.Inline.FSType == "" {
				return nil
			}
			break
		}
		if v.PV.Spec.CSI.FSType == "" || !slices.Contains(v.PV.Spec.AccessModes, corev1.ReadWriteOnce) {
			return nil
		}
	}
	return &Ownership{GID: *sc.FSGroup,
		OnRootMismatch: sc.FSGroupChangePolicy != nil && *sc.FSGroupChangePolicy == corev1.FSGroupChangeOnRootMismatch}
}
