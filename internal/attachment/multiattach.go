package attachment

import (
	"slices"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/volplane/volplane/internal/binding"
)

// MultiAttachAllowed is the reference's IsMultiAttachAllowed: a volume may
// be attached to several nodes when its access modes are empty or include
// ReadWriteMany or ReadOnlyMany.
func MultiAttachAllowed(pv *v1.PersistentVolume) bool {
	modes := pv.Spec.AccessModes
	return len(modes) == 0 || slices.Contains(modes, v1.ReadWriteMany) || slices.Contains(modes, v1.ReadOnlyMany)
}

// singleNode says whether the volume may be attached to one node only:
// when any PersistentVolume naming it says so, since the attachment held
// elsewhere may have been made through that one. An in-tree inline volume
// (no PV) may, as the reference's IsMultiAttachAllowed says of a pod's
// iscsi or fc volume; a migrated inline one has its translated PV's
// access modes.
func (r *reconcile) singleNode(d *Desired) bool {
	for _, pv := range r.f.Volumes {
		if u, ok := VolumeOf(pv); ok && u == d.Unique && !MultiAttachAllowed(pv) {
			return true
		}
	}
	return d.PV != nil && !MultiAttachAllowed(d.PV)
}

// holders are the non-terminated pods on the given nodes that use the
// volume, through any of its PersistentVolumes.
func (r *reconcile) holders(d *Desired, nodes []string) []*v1.Pod {
	var out []*v1.Pod
	for _, name := range sortedKeys(r.f.Volumes) {
		if u, ok := VolumeOf(r.f.Volumes[name]); !ok || u != d.Unique {
			continue
		}
		for _, pod := range r.f.Users[name] {
			if slices.Contains(nodes, pod.Spec.NodeName) && !binding.PodTerminated(pod) && !slices.Contains(out, pod) {
				out = append(out, pod)
			}
		}
	}
	return out
}

// elsewhere are the other nodes that hold each wanted volume. An
// attachment holds a volume when its PersistentVolume is one of that
// volume's, when its inline spec names the volume, or when its name is the
// volume's attachment name on its node (the name hashes handle, driver and
// node): either way, whichever PV it was made through. An in-tree volume
// is held by the nodes whose volumesAttached list it (Facts.InTreeElsewhere).
func elsewhere(f Facts, desired map[v1.UniqueVolumeName]*Desired) map[v1.UniqueVolumeName][]string {
	out := map[v1.UniqueVolumeName][]string{}
	add := func(u v1.UniqueVolumeName, node string) {
		if node != f.Node.Name && !slices.Contains(out[u], node) {
			out[u] = append(out[u], node)
		}
	}
	for _, va := range f.Attachments {
		if va.Spec.NodeName == f.Node.Name {
			continue
		}
		via, known := attachmentVolume(f, va)
		for u, d := range desired {
			if (known && u == via) || (d.Kind != KindInTree && va.Name == Name(d.Handle, d.Driver, va.Spec.NodeName)) {
				add(u, va.Spec.NodeName)
			}
		}
	}
	for u, d := range desired {
		if d.Kind == KindInTree {
			for _, n := range f.InTreeElsewhere[u] {
				add(u, n)
			}
		}
	}
	for _, nodes := range out {
		slices.Sort(nodes)
	}
	return out
}

// attachmentVolume is the unique volume name of the volume an attachment
// names: its PersistentVolume's (as far as Facts holds it), or its inline
// spec's CSI source.
func attachmentVolume(f Facts, va *storagev1.VolumeAttachment) (v1.UniqueVolumeName, bool) {
	src := va.Spec.Source
	switch {
	case src.PersistentVolumeName != nil:
		return VolumeOf(f.Volumes[*src.PersistentVolumeName])
	case src.InlineVolumeSpec != nil && src.InlineVolumeSpec.CSI != nil:
		csi := src.InlineVolumeSpec.CSI
		return UniqueVolumeName(csi.Driver, csi.VolumeHandle), true
	}
	return "", false
}

// SourceName names what an attachment attaches, in waits and logs: its
// PersistentVolume, or "inline:" and its inline volume handle.
func SourceName(va *storagev1.VolumeAttachment) string {
	src := va.Spec.Source
	switch {
	case src.PersistentVolumeName != nil:
		return *src.PersistentVolumeName
	case src.InlineVolumeSpec != nil && src.InlineVolumeSpec.CSI != nil:
		return "inline:" + src.InlineVolumeSpec.CSI.VolumeHandle
	}
	return "inline"
}
