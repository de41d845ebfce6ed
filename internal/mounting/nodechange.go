package mounting

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/volplane/volplane/internal/attachment"
	"github.com/volplane/volplane/internal/protection"
)

// NodeChange is what an update of a node's Node object means to the pods
// waiting on it: a pod waits on its node for the node to exist, for its
// labels (topology), and for each attachable volume to be reported in use
// (status.volumesInUse) and attached (status.volumesAttached). A change of
// anything else (heartbeats, conditions, images) concerns no pod, and a
// change of one volume's reports only the pods using that volume, so a
// node's status writes do not wake every waiting pod of the node.
type NodeChange struct {
	// All: the node appeared or its labels changed.
	All bool
	// Volumes are those whose in-use or attached report changed.
	Volumes map[corev1.UniqueVolumeName]bool
}

// ChangeOf compares the node before and after an update; old is nil for
// a node just added.
func ChangeOf(old, cur *corev1.Node) NodeChange {
	if old == nil || cur == nil || !equality.Semantic.DeepEqual(old.Labels, cur.Labels) {
		return NodeChange{All: true}
	}
	c := NodeChange{Volumes: map[corev1.UniqueVolumeName]bool{}}
	flip := func(before, after map[corev1.UniqueVolumeName]bool) {
		for v := range before {
			if !after[v] {
				c.Volumes[v] = true
			}
		}
		for v := range after {
			if !before[v] {
				c.Volumes[v] = true
			}
		}
	}
	flip(nameSet(old.Status.VolumesInUse), nameSet(cur.Status.VolumesInUse))
	flip(AttachedTo(old), AttachedTo(cur))
	return c
}

// Concerns says whether the change may let the pod go on. volumeOf gives
// the PV a claim ("namespace/name") of the pod is bound to, nil when
// there is none yet (the claim's and the volume's own events wake the pod
// then). A PV of an in-tree plugin is always concerned: its name in the
// node's reports is the translated one, not worked out here.
func (c NodeChange) Concerns(pod *corev1.Pod, volumeOf func(claim string) *corev1.PersistentVolume) bool {
	if c.All {
		return true
	}
	if len(c.Volumes) == 0 {
		return false
	}
	for _, key := range protection.ClaimKeys(pod) {
		pv := volumeOf(key)
		switch {
		case pv == nil:
		case pv.Spec.CSI == nil:
			return true
		case c.Volumes[attachment.UniqueVolumeName(pv.Spec.CSI.Driver, pv.Spec.CSI.VolumeHandle)]:
			return true
		}
	}
	for i := range pod.Spec.Volumes {
		v := &pod.Spec.Volumes[i]
		if v.CSI != nil && c.Volumes[attachment.UniqueVolumeName(v.CSI.Driver, InlineHandle(pod, v.Name))] {
			return true
		}
	}
	return false
}

func nameSet(names []corev1.UniqueVolumeName) map[corev1.UniqueVolumeName]bool {
	out := make(map[corev1.UniqueVolumeName]bool, len(names))
	for _, n := range names {
		out[n] = true
	}
	return out
}

// AttachedTo is the set of volumes the node's status.volumesAttached
// lists: World.Attached.
func AttachedTo(n *corev1.Node) map[corev1.UniqueVolumeName]bool {
	out := make(map[corev1.UniqueVolumeName]bool, len(n.Status.VolumesAttached))
	for _, a := range n.Status.VolumesAttached {
		out[a.Name] = true
	}
	return out
}
