package attachment

import (
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// uniqueName is the unique volume name of an attachment. It comes from the
// PersistentVolume (as its CSI driver sees it: a migrated PV translated)
// or the inline spec, or, once the PV is gone, from the node's status: the
// entry whose driver and handle hash to the attachment's name. false means
// neither knows it; such a volume cannot be in the node's status either.
func (r *reconcile) uniqueName(va *storagev1.VolumeAttachment) (v1.UniqueVolumeName, bool) {
	if u, ok := attachmentVolume(r.f, va); ok {
		if driver, handle, csi := SplitUnique(u); csi && Name(handle, driver, r.f.Node.Name) == va.Name {
			return u, true
		}
	}
	candidates := slices.Clone(r.f.Node.VolumesInUse)
	for _, a := range r.f.Node.VolumesAttached {
		candidates = append(candidates, a.Name)
	}
	for _, u := range candidates {
		driver, handle, ok := SplitUnique(u)
		if ok && Name(handle, driver, r.f.Node.Name) == va.Name {
			return u, true
		}
	}
	return "", false
}

// SplitUnique reads kubernetes.io/csi/<driver>^<handle>.
func SplitUnique(u v1.UniqueVolumeName) (driver, handle string, ok bool) {
	rest, ok := strings.CutPrefix(string(u), csiPluginName+"/")
	if !ok {
		return "", "", false
	}
	return strings.Cut(rest, "^")
}

func set(names []v1.UniqueVolumeName) map[v1.UniqueVolumeName]bool {
	out := make(map[v1.UniqueVolumeName]bool, len(names))
	for _, n := range names {
		out[n] = true
	}
	return out
}

func attachedSet(vols []v1.AttachedVolume) map[v1.UniqueVolumeName]bool {
	out := make(map[v1.UniqueVolumeName]bool, len(vols))
	for _, v := range vols {
		out[v.Name] = true
	}
	return out
}

func sortedKeys[K ~string, V any](m map[K]V) []K {
	keys := make([]K, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
