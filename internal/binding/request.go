package binding

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Request is a claim compiled once for matching against many PVs: the class,
// modes and selector are worked out a single time.
type Request struct {
	Claim           *v1.PersistentVolumeClaim
	Key             string // namespace/name
	Class           string
	VolumeMode      v1.PersistentVolumeMode
	AttributesClass string
	Modes           ModeSet
	// UnknownModes is set when the claim asks for a mode Kubernetes does not
	// know; no PV can offer it.
	UnknownModes bool
	Size         resource.Quantity
	// Selector is nil when the claim has none.
	Selector    labels.Selector
	SelectorErr error
}

// NewRequest compiles a claim for matching.
func NewRequest(claim *v1.PersistentVolumeClaim) *Request {
	modes, unknown := ModesOf(claim.Spec.AccessModes)
	r := &Request{
		Claim:           claim,
		Key:             ClaimKey(claim),
		Class:           ClaimClass(claim),
		VolumeMode:      claimVolumeMode(claim),
		AttributesClass: claimAttributesClass(claim),
		Modes:           modes,
		UnknownModes:    unknown,
		Size:            claim.Spec.Resources.Requests[v1.ResourceStorage],
	}
	if claim.Spec.Selector != nil {
		r.Selector, r.SelectorErr = metav1.LabelSelectorAsSelector(claim.Spec.Selector)
	}
	return r
}

// ClaimKey is the claim's namespace/name, the key PV claimRefs are matched by.
func ClaimKey(claim *v1.PersistentVolumeClaim) string {
	return claim.Namespace + "/" + claim.Name
}

// ClaimRefKey is the namespace/name a PV's claimRef points at.
func ClaimRefKey(ref *v1.ObjectReference) string {
	return ref.Namespace + "/" + ref.Name
}

// IsBoundToClaim reports whether the PV's claimRef names this claim: same
// namespace and name, and a UID that is empty (pre-bound by name) or equal.
func IsBoundToClaim(pv *v1.PersistentVolume, claim *v1.PersistentVolumeClaim) bool {
	ref := pv.Spec.ClaimRef
	if ref == nil || ref.Name != claim.Name || ref.Namespace != claim.Namespace {
		return false
	}
	return ref.UID == "" || ref.UID == claim.UID
}

// Capacity is the PV's storage capacity (zero when unset).
func Capacity(pv *v1.PersistentVolume) resource.Quantity {
	return pv.Spec.Capacity[v1.ResourceStorage]
}

// FreePhase reports whether an unclaimed PV in this phase may be bound.
// Kubernetes accepts only Available; we also accept Pending because the API
// server creates every PV Pending and binding it at once saves the write that
// would mark it Available (and the race the reference loses in between).
func FreePhase(phase v1.PersistentVolumePhase) bool {
	return phase == v1.VolumeAvailable || phase == v1.VolumePending
}

// Check says whether one PV could serve the claim, ignoring other candidates.
// With delayBinding (WaitForFirstConsumer) only PVs pre-bound to the claim fit.
func Check(claim *v1.PersistentVolumeClaim, pv *v1.PersistentVolume, delayBinding bool) Reason {
	reason, _ := NewRequest(claim).check(pv, delayBinding)
	return reason
}

// Check is the compiled form of the package-level Check.
func (r *Request) Check(pv *v1.PersistentVolume, delayBinding bool) Reason {
	reason, _ := r.check(pv, delayBinding)
	return reason
}

// check applies the Kubernetes filters. A PV pre-bound to the claim is taken
// whatever its phase, class or labels (the user, or a provisioner, chose it),
// but it must still be large enough and of the right volume mode, attributes
// class and access modes, and not being deleted.
func (r *Request) check(pv *v1.PersistentVolume, delayBinding bool) (Reason, string) {
	if r.SelectorErr != nil {
		return ReasonInvalidSelector, r.SelectorErr.Error()
	}
	if pv.DeletionTimestamp != nil {
		return ReasonBeingDeleted, ""
	}
	preBound, reason, detail := r.checkClaimRef(pv)
	if reason != ReasonNone {
		return reason, detail
	}
	if !preBound && VolumeClass(pv) != r.Class {
		return ReasonClassMismatch, fmt.Sprintf("volume class %q, claim class %q", VolumeClass(pv), r.Class)
	}
	if reason, detail := r.checkShape(pv); reason != ReasonNone {
		return reason, detail
	}
	if preBound {
		return ReasonNone, ""
	}
	return r.checkFree(pv, delayBinding)
}

func (r *Request) checkClaimRef(pv *v1.PersistentVolume) (preBound bool, reason Reason, detail string) {
	ref := pv.Spec.ClaimRef
	if ref == nil {
		return false, ReasonNone, ""
	}
	if IsBoundToClaim(pv, r.Claim) {
		return true, ReasonNone, ""
	}
	if ref.UID == "" {
		return false, ReasonPreBoundToOther, "pre-bound to " + ClaimRefKey(ref)
	}
	if ClaimRefKey(ref) == r.Key {
		return false, ReasonBoundToOther, fmt.Sprintf("bound to an earlier claim %s (uid %s)", ClaimRefKey(ref), ref.UID)
	}
	return false, ReasonBoundToOther, "bound to " + ClaimRefKey(ref)
}

// checkShape holds the checks that apply to pre-bound and free PVs alike.
func (r *Request) checkShape(pv *v1.PersistentVolume) (Reason, string) {
	if mode := VolumeMode(pv); mode != r.VolumeMode {
		return ReasonVolumeModeMismatch, fmt.Sprintf("volume mode %s, claim mode %s", mode, r.VolumeMode)
	}
	if vac := VolumeAttributesClass(pv); vac != r.AttributesClass {
		return ReasonAttributesClassMismatch, fmt.Sprintf("volume attributes class %q, claim attributes class %q", vac, r.AttributesClass)
	}
	pvModes, _ := ModesOf(pv.Spec.AccessModes)
	if r.UnknownModes || !pvModes.Includes(r.Modes) {
		return ReasonAccessModes, fmt.Sprintf("volume modes [%s], claim modes %v", pvModes, r.Claim.Spec.AccessModes)
	}
	capacity := Capacity(pv)
	if capacity.Cmp(r.Size) < 0 {
		return ReasonTooSmall, fmt.Sprintf("capacity %s, request %s", capacity.String(), r.Size.String())
	}
	return ReasonNone, ""
}

// checkFree holds the checks that apply only to PVs without a claimRef.
func (r *Request) checkFree(pv *v1.PersistentVolume, delayBinding bool) (Reason, string) {
	if r.Selector != nil && !r.Selector.Matches(labels.Set(pv.Labels)) {
		return ReasonSelector, fmt.Sprintf("labels %v do not match %s", pv.Labels, r.Selector)
	}
	if !FreePhase(pv.Status.Phase) {
		return ReasonNotAvailable, fmt.Sprintf("phase %q", pv.Status.Phase)
	}
	if delayBinding {
		return ReasonWaitForFirstConsumer, "the scheduler binds it when a pod using the claim is scheduled"
	}
	return ReasonNone, ""
}
