package attachment

import (
	"slices"

	v1 "k8s.io/api/core/v1"

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
// elsewhere may have been made through that one.
func (r *reconcile) singleNode(d *Desired) bool {
	for _, pv := range r.f.Volumes {
		if u, ok := VolumeOf(pv); ok && u == d.Unique && !MultiAttachAllowed(pv) {
			return true
		}
	}
	return !MultiAttachAllowed(d.PV)
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

// elsewhere are the other nodes that hold an attachment of each wanted
// volume. An attachment holds a volume when its PersistentVolume is one of
// that volume's, or when its name is the volume's attachment name on its
// node (the name hashes handle, driver and node): either way, whichever PV
// it was made through.
func elsewhere(f Facts, desired map[v1.UniqueVolumeName]*Desired) map[v1.UniqueVolumeName][]string {
	out := map[v1.UniqueVolumeName][]string{}
	for _, va := range f.Attachments {
		if va.Spec.NodeName == f.Node.Name || va.Spec.Source.PersistentVolumeName == nil {
			continue
		}
		via, known := VolumeOf(f.Volumes[*va.Spec.Source.PersistentVolumeName])
		for u, d := range desired {
			if ((known && u == via) || va.Name == Name(d.Handle, d.Driver, va.Spec.NodeName)) && !slices.Contains(out[u], va.Spec.NodeName) {
				out[u] = append(out[u], va.Spec.NodeName)
			}
		}
	}
	for _, nodes := range out {
		slices.Sort(nodes)
	}
	return out
}
