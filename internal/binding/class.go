package binding

import (
	"sort"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// Annotations that mark a default StorageClass; either one set to "true" counts.
const (
	AnnDefaultClass     = "storageclass.kubernetes.io/is-default-class"
	AnnBetaDefaultClass = "storageclass.beta.kubernetes.io/is-default-class"
)

// ClaimClass is the class a claim asks for: the beta annotation wins over
// spec.storageClassName; no class at all is "".
func ClaimClass(claim *v1.PersistentVolumeClaim) string {
	if class, ok := claim.Annotations[v1.BetaStorageClassAnnotation]; ok {
		return class
	}
	if claim.Spec.StorageClassName != nil {
		return *claim.Spec.StorageClassName
	}
	return ""
}

// ClaimHasClass reports whether the claim names a class at all, "" included.
// Only claims without one get the default class assigned.
func ClaimHasClass(claim *v1.PersistentVolumeClaim) bool {
	_, ok := claim.Annotations[v1.BetaStorageClassAnnotation]
	return ok || claim.Spec.StorageClassName != nil
}

// VolumeClass is the class of a PV: the beta annotation wins over
// spec.storageClassName.
func VolumeClass(pv *v1.PersistentVolume) string {
	if class, ok := pv.Annotations[v1.BetaStorageClassAnnotation]; ok {
		return class
	}
	return pv.Spec.StorageClassName
}

// IsDefaultClass reports whether either default-class annotation is "true".
func IsDefaultClass(class *storagev1.StorageClass) bool {
	return class.Annotations[AnnDefaultClass] == "true" || class.Annotations[AnnBetaDefaultClass] == "true"
}

// DefaultClass picks the default class among classes: the newest default
// wins, equal creation times are broken by name (ascending). Nil when none is
// marked default.
func DefaultClass(classes []*storagev1.StorageClass) *storagev1.StorageClass {
	var defaults []*storagev1.StorageClass
	for _, c := range classes {
		if c != nil && IsDefaultClass(c) {
			defaults = append(defaults, c)
		}
	}
	if len(defaults) == 0 {
		return nil
	}
	sort.Slice(defaults, func(i, j int) bool {
		ti, tj := defaults[i].CreationTimestamp.UnixNano(), defaults[j].CreationTimestamp.UnixNano()
		if ti != tj {
			return ti > tj
		}
		return defaults[i].Name < defaults[j].Name
	})
	return defaults[0]
}

// DelayBinding reports whether the class binds on first consumer. A missing
// class or an unset mode means Immediate (the API server defaults the mode, so
// unset only happens in hand-built objects).
func DelayBinding(class *storagev1.StorageClass) bool {
	return class != nil && class.VolumeBindingMode != nil &&
		*class.VolumeBindingMode == storagev1.VolumeBindingWaitForFirstConsumer
}

// claimVolumeMode and volumeVolumeMode default an unset mode to Filesystem, as
// Kubernetes does for objects written by older API servers.
func claimVolumeMode(claim *v1.PersistentVolumeClaim) v1.PersistentVolumeMode {
	if claim.Spec.VolumeMode != nil {
		return *claim.Spec.VolumeMode
	}
	return v1.PersistentVolumeFilesystem
}

// VolumeMode is the PV's volume mode, Filesystem when unset.
func VolumeMode(pv *v1.PersistentVolume) v1.PersistentVolumeMode {
	if pv.Spec.VolumeMode != nil {
		return *pv.Spec.VolumeMode
	}
	return v1.PersistentVolumeFilesystem
}

// VolumeAttributesClass is the PV's volumeAttributesClassName, "" when unset.
func VolumeAttributesClass(pv *v1.PersistentVolume) string {
	if pv.Spec.VolumeAttributesClassName != nil {
		return *pv.Spec.VolumeAttributesClassName
	}
	return ""
}

func claimAttributesClass(claim *v1.PersistentVolumeClaim) string {
	if claim.Spec.VolumeAttributesClassName != nil {
		return *claim.Spec.VolumeAttributesClassName
	}
	return ""
}
