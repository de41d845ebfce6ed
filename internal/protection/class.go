package protection

import (
	"slices"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// ClassFinalizer is vac-protection's finalizer on VolumeAttributesClasses
// (pkg/volume/util/finalizer.go's VACProtectionFinalizer). No admission
// plugin adds it: the loop does.
const ClassFinalizer = "kubernetes.io/vac-protection"

// VolumeClasses are the VolumeAttributesClasses a PV uses: its spec's
// (the reference's getPVReferencedVACNames).
func VolumeClasses(pv *v1.PersistentVolume) []string {
	if n := pv.Spec.VolumeAttributesClassName; n != nil && *n != "" {
		return []string{*n}
	}
	return nil
}

// ClaimClasses are the VolumeAttributesClasses a claim uses, each once,
// sorted: the one its spec asks for, the one its volume has now
// (status.currentVolumeAttributesClassName) and the one a modification is
// moving to (status.modifyVolumeStatus.targetVolumeAttributesClassName),
// as the reference's getPVCReferencedVACNames.
func ClaimClasses(c *v1.PersistentVolumeClaim) []string {
	var out []string
	add := func(n *string) {
		if n != nil && *n != "" && !slices.Contains(out, *n) {
			out = append(out, *n)
		}
	}
	add(c.Spec.VolumeAttributesClassName)
	add(c.Status.CurrentVolumeAttributesClassName)
	if m := c.Status.ModifyVolumeStatus; m != nil {
		add(&m.TargetVolumeAttributesClassName)
	}
	slices.Sort(out)
	return out
}

// Dropped are the classes old uses and cur does not: an update that may
// free them (the reference's pvcUpdated and pvUpdated).
func Dropped(old, cur []string) []string {
	var out []string
	for _, n := range old {
		if !slices.Contains(cur, n) {
			out = append(out, n)
		}
	}
	return out
}

// ClassFacts is what a VolumeAttributesClass decision rests on: the PVs and
// claims the informer caches index under the class, and, once listed, the
// cluster's PVs and claims from a live list.
type ClassFacts struct {
	Class        *storagev1.VolumeAttributesClass
	CachedPVs    []*v1.PersistentVolume
	CachedClaims []*v1.PersistentVolumeClaim
	LivePVs      []*v1.PersistentVolume
	LiveClaims   []*v1.PersistentVolumeClaim
	Listed       bool
}

// DecideClass decides a vac-protection sync. A class not being deleted
// gets the finalizer. A class being deleted keeps it while a PV or a claim
// of the informer caches uses it (the reference's whole check). Beyond the
// reference, which documents that a claim created while the class is
// deleted can be missed by its caches, a class no cached object uses is
// confirmed against a live list of PVs and claims before the finalizer
// goes: deletions of classes are rare, the list is affordable.
func DecideClass(f ClassFacts) Decision {
	c := f.Class
	if d, done := finalizerStep(c.DeletionTimestamp != nil, c.Finalizers, ClassFinalizer); done {
		return d
	}
	return cachedThenLive(func() (Decision, bool) { return classUsedBy(c.Name, f.CachedPVs, f.CachedClaims) },
		func() (Decision, bool) { return classUsedBy(c.Name, f.LivePVs, f.LiveClaims) }, f.Listed, ListUsers)
}

func classUsedBy(class string, pvs []*v1.PersistentVolume, claims []*v1.PersistentVolumeClaim) (Decision, bool) {
	for _, pv := range pvs {
		if slices.Contains(VolumeClasses(pv), class) {
			return Decision{Action: Keep, Reason: ReasonUsedByVolume, User: pv.Name}, true
		}
	}
	for _, c := range claims {
		if slices.Contains(ClaimClasses(c), class) {
			return Decision{Action: Keep, Reason: ReasonUsedByClaim, User: c.Namespace + "/" + c.Name}, true
		}
	}
	return Decision{}, false
}
