package binding

import (
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	storagehelpers "k8s.io/component-helpers/storage/volume"
)

// AnnPreResizeCapacity on a PV carries the claim capacity to report while a
// filesystem resize is pending (set by the expander).
const AnnPreResizeCapacity = "volume.alpha.kubernetes.io/pre-resize-capacity"

// The steps below never modify their arguments (they may come from an
// informer cache). Each returns a modified deep copy, or nil when the object
// already has the wanted state, so callers write only real changes. A crash
// between two steps is repaired by the next sync, which finds the earlier
// steps already done (nil) and continues.

// BindVolumeSpec is bind step 1: point the PV's claimRef at the claim. The
// bound-by-controller annotation is added only when the PV was not already
// pre-bound to this claim; its absence keeps meaning "the user chose".
func BindVolumeSpec(pv *v1.PersistentVolume, claim *v1.PersistentVolumeClaim) *v1.PersistentVolume {
	ref := pv.Spec.ClaimRef
	refStale := ref == nil || ref.Name != claim.Name || ref.Namespace != claim.Namespace || ref.UID != claim.UID
	markController := !IsBoundToClaim(pv, claim) &&
		!metav1.HasAnnotation(pv.ObjectMeta, storagehelpers.AnnBoundByController)
	if !refStale && !markController {
		return nil
	}
	out := pv.DeepCopy()
	if refStale {
		out.Spec.ClaimRef = ClaimReference(claim)
	}
	if markController {
		metav1.SetMetaDataAnnotation(&out.ObjectMeta, storagehelpers.AnnBoundByController, "yes")
	}
	return out
}

// ClaimReference is the claimRef a bound PV carries.
func ClaimReference(claim *v1.PersistentVolumeClaim) *v1.ObjectReference {
	return &v1.ObjectReference{
		Kind:            "PersistentVolumeClaim",
		APIVersion:      "v1",
		Namespace:       claim.Namespace,
		Name:            claim.Name,
		UID:             claim.UID,
		ResourceVersion: claim.ResourceVersion,
	}
}

// BindVolumeStatus is bind step 2: PV phase Bound.
func BindVolumeStatus(pv *v1.PersistentVolume) *v1.PersistentVolume {
	return SetVolumePhase(pv, v1.VolumeBound, "")
}

// BindClaimSpec is bind step 3: spec.volumeName (plus bound-by-controller when
// the controller is the one setting it) and bind-completed.
func BindClaimSpec(claim *v1.PersistentVolumeClaim, pv *v1.PersistentVolume) *v1.PersistentVolumeClaim {
	setName := claim.Spec.VolumeName != pv.Name
	markCompleted := !metav1.HasAnnotation(claim.ObjectMeta, storagehelpers.AnnBindCompleted)
	if !setName && !markCompleted {
		return nil
	}
	out := claim.DeepCopy()
	if setName {
		out.Spec.VolumeName = pv.Name
		if !metav1.HasAnnotation(out.ObjectMeta, storagehelpers.AnnBoundByController) {
			metav1.SetMetaDataAnnotation(&out.ObjectMeta, storagehelpers.AnnBoundByController, "yes")
		}
	}
	if markCompleted {
		metav1.SetMetaDataAnnotation(&out.ObjectMeta, storagehelpers.AnnBindCompleted, "yes")
	}
	return out
}

// BindClaimStatus is bind step 4: phase Bound, the PV's access modes, and the
// PV's capacity. Capacity is copied only when the claim becomes Bound: later a
// difference can be deliberate (a filesystem smaller than its block device).
func BindClaimStatus(claim *v1.PersistentVolumeClaim, pv *v1.PersistentVolume) *v1.PersistentVolumeClaim {
	out := claim.DeepCopy()
	dirty := false
	becomingBound := claim.Status.Phase != v1.ClaimBound
	if becomingBound {
		out.Status.Phase = v1.ClaimBound
		dirty = true
	}
	if !slices.Equal(claim.Status.AccessModes, pv.Spec.AccessModes) {
		out.Status.AccessModes = slices.Clone(pv.Spec.AccessModes)
		dirty = true
	}
	if becomingBound && setBoundCapacity(out, pv) {
		dirty = true
	}
	// The attributes class is recorded only on the Pending→Bound transition;
	// afterwards the resizer owns the field.
	if claim.Status.Phase == v1.ClaimPending && !equalStringPtr(claim.Status.CurrentVolumeAttributesClassName, pv.Spec.VolumeAttributesClassName) {
		out.Status.CurrentVolumeAttributesClassName = copyStringPtr(pv.Spec.VolumeAttributesClassName)
		dirty = true
	}
	if !dirty {
		return nil
	}
	return out
}

// setBoundCapacity copies the PV capacity (or the pre-resize capacity) into
// the claim status and reports whether it changed anything.
func setBoundCapacity(claim *v1.PersistentVolumeClaim, pv *v1.PersistentVolume) bool {
	pvCap, ok := pv.Spec.Capacity[v1.ResourceStorage]
	if !ok {
		return false // invalid PV; the API server rejects it, nothing to copy
	}
	if pre, ok := pv.Annotations[AnnPreResizeCapacity]; ok {
		qty, err := resource.ParseQuantity(pre)
		if err != nil {
			qty = pvCap
		}
		if claim.Status.Capacity == nil {
			claim.Status.Capacity = v1.ResourceList{}
		}
		claim.Status.Capacity[v1.ResourceStorage] = qty
		return true
	}
	claimCap, ok := claim.Status.Capacity[v1.ResourceStorage]
	if ok && claimCap.Cmp(pvCap) == 0 {
		return false
	}
	claim.Status.Capacity = pv.Spec.Capacity.DeepCopy()
	return true
}

// SetClaimPhase sets a claim's status phase for a claim that has no volume
// (Pending or Lost) and clears what only a bound claim reports.
func SetClaimPhase(claim *v1.PersistentVolumeClaim, phase v1.PersistentVolumeClaimPhase) *v1.PersistentVolumeClaim {
	s := claim.Status
	if s.Phase == phase && s.AccessModes == nil && s.Capacity == nil && s.CurrentVolumeAttributesClassName == nil {
		return nil
	}
	out := claim.DeepCopy()
	out.Status.Phase = phase
	out.Status.AccessModes = nil
	out.Status.Capacity = nil
	out.Status.CurrentVolumeAttributesClassName = nil
	return out
}

// SetClaimClass writes spec.storageClassName (retroactive default class).
func SetClaimClass(claim *v1.PersistentVolumeClaim, class string) *v1.PersistentVolumeClaim {
	if claim.Spec.StorageClassName != nil && *claim.Spec.StorageClassName == class {
		return nil
	}
	out := claim.DeepCopy()
	out.Spec.StorageClassName = &class
	return out
}

// SetClaimProvisioner names the provisioner in both storage-provisioner
// annotations; external provisioners still read either one. Like
// setClaimProvisioner, the same write brings migrated-to in step with the
// new name (a CSI driver's name drops it).
func SetClaimProvisioner(claim *v1.PersistentVolumeClaim, provisioner string) *v1.PersistentVolumeClaim {
	ga, gaSet := claim.Annotations[storagehelpers.AnnStorageProvisioner]
	beta, betaSet := claim.Annotations[storagehelpers.AnnBetaStorageProvisioner]
	if gaSet && betaSet && ga == provisioner && beta == provisioner {
		return nil
	}
	out := claim.DeepCopy()
	metav1.SetMetaDataAnnotation(&out.ObjectMeta, storagehelpers.AnnStorageProvisioner, provisioner)
	metav1.SetMetaDataAnnotation(&out.ObjectMeta, storagehelpers.AnnBetaStorageProvisioner, provisioner)
	if want, change := migratedTo(out.Annotations, true); change {
		setMigratedTo(out.Annotations, want)
	}
	return out
}

// SetVolumePhase sets a PV's status phase and message. Like the reference it
// compares the phase only: an unchanged phase means no write. An empty phase
// is a decision's "leave the phase alone" and never writes: written, the API
// server would default it to Pending, and a Released or Failed PV would flip
// to Pending and back on every sync (repeating its reclaim and its events).
func SetVolumePhase(pv *v1.PersistentVolume, phase v1.PersistentVolumePhase, message string) *v1.PersistentVolume {
	if phase == "" || pv.Status.Phase == phase {
		return nil
	}
	out := pv.DeepCopy()
	out.Status.Phase = phase
	out.Status.Message = message
	return out
}

// UnbindVolumeSpec undoes a bind on the PV side. A PV the controller bound
// loses its claimRef and the bound-by-controller annotation; a PV the user
// pre-bound keeps its claimRef (the user's choice) and loses only the UID.
// Follow with SetVolumePhase(Available).
func UnbindVolumeSpec(pv *v1.PersistentVolume) *v1.PersistentVolume {
	ref := pv.Spec.ClaimRef
	if ref == nil {
		return nil
	}
	controllerBound := metav1.HasAnnotation(pv.ObjectMeta, storagehelpers.AnnBoundByController)
	if !controllerBound && ref.UID == "" {
		return nil
	}
	out := pv.DeepCopy()
	if controllerBound {
		out.Spec.ClaimRef = nil
		delete(out.Annotations, storagehelpers.AnnBoundByController)
		if len(out.Annotations) == 0 {
			out.Annotations = nil
		}
		return out
	}
	out.Spec.ClaimRef.UID = ""
	return out
}

func equalStringPtr(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func copyStringPtr(s *string) *string {
	if s == nil {
		return nil
	}
	c := *s
	return &c
}

// BindStillHolds checks, on the newest copy of pv, that a decision to bind
// claim to it still holds: the PV is free or already this claim's, and no
// other claim has reserved it (reservedBy: the key of the claim holding it
// in memory, "" for none). A claim naming its volume in spec.volumeName
// decides without a reservation, so without this check its bind could
// overwrite the claimRef another worker's bind has just written. The error
// says why, and that deciding again is the way on.
func BindStillHolds(pv *v1.PersistentVolume, claim *v1.PersistentVolumeClaim, reservedBy string) error {
	if ref := pv.Spec.ClaimRef; ref != nil && !IsBoundToClaim(pv, claim) {
		return fmt.Errorf("bind %s: the volume was taken by claim %s meanwhile; deciding again", pv.Name, ClaimRefKey(ref))
	}
	if reservedBy != "" && reservedBy != ClaimKey(claim) {
		return fmt.Errorf("bind %s: the volume is reserved by claim %s; deciding again", pv.Name, reservedBy)
	}
	return nil
}
