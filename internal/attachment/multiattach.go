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

// holders are the non-terminated pods on the given nodes that use the
// volume.
func (r *reconcile) holders(pv string, nodes []string) []*v1.Pod {
	var out []*v1.Pod
	for _, pod := range r.f.Users[pv] {
		if slices.Contains(nodes, pod.Spec.NodeName) && !binding.PodTerminated(pod) {
			out = append(out, pod)
		}
	}
	return out
}
