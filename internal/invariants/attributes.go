package invariants

import (
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/utils/ptr"
)

// Attributes are the promises of VolumeAttributesClasses at rest, for
// every Bound claim of a listed driver with no modification in progress:
// its current class is its PV's, no modify condition is left on it, and
// the driver holds every parameter of that class for the volume (classes
// are the cluster's VolumeAttributesClasses; one gone is not checked).
func Attributes(s State, classes []storagev1.VolumeAttributesClass) []string {
	var out []string
	for c, pv := range s.boundClaims() {
		if c.Status.ModifyVolumeStatus != nil {
			continue
		}
		name, pvClass := c.Namespace+"/"+c.Name, ptr.Deref(pv.Spec.VolumeAttributesClassName, "")
		if current := ptr.Deref(c.Status.CurrentVolumeAttributesClassName, ""); current != pvClass {
			out = append(out, fmt.Sprintf("claim %s at rest has class %q, its PV %q", name, current, pvClass))
		}
		for _, cond := range c.Status.Conditions {
			if cond.Type == v1.PersistentVolumeClaimVolumeModifyingVolume || cond.Type == v1.PersistentVolumeClaimVolumeModifyVolumeError {
				out = append(out, fmt.Sprintf("claim %s at rest keeps condition %s", name, cond.Type))
			}
		}
		if problem := s.heldBy(pv, pvClass, classes); problem != "" {
			out = append(out, problem)
		}
	}
	return out
}

// heldBy says how the driver's parameters for pv's volume miss a parameter
// of class ("" if they do not, or the class is gone).
func (s State) heldBy(pv *v1.PersistentVolume, class string, classes []storagev1.VolumeAttributesClass) string {
	i := slices.IndexFunc(classes, func(vac storagev1.VolumeAttributesClass) bool { return vac.Name == class })
	if class == "" || i < 0 {
		return ""
	}
	held := s.parameters(Volume{pv.Spec.CSI.Driver, pv.Spec.CSI.VolumeHandle})
	for k, v := range classes[i].Parameters {
		if held[k] != v {
			return fmt.Sprintf("PV %s has class %s but the driver holds %s=%q", pv.Name, class, k, held[k])
		}
	}
	return ""
}

// parameters are the mutable parameters a backend holds for v (nil: none).
func (s State) parameters(v Volume) map[string]string {
	for _, b := range s.Backends {
		if p, ok := b.Parameters[v.Handle]; ok && b.Driver == v.Driver {
			return p
		}
	}
	return nil
}
