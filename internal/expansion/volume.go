package expansion

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/volplane/volplane/internal/binding"
)

// GrowVolume is the PV with spec.capacity[storage] = capacity, or nil when
// the PV already has at least that much: a PV's capacity only grows.
func GrowVolume(pv *v1.PersistentVolume, capacity resource.Quantity) *v1.PersistentVolume {
	if have, ok := pv.Spec.Capacity[v1.ResourceStorage]; ok && have.Cmp(capacity) >= 0 {
		return nil
	}
	out := pv.DeepCopy()
	if out.Spec.Capacity == nil {
		out.Spec.Capacity = v1.ResourceList{}
	}
	out.Spec.Capacity[v1.ResourceStorage] = capacity
	return out
}

// NeedsResize says whether a claim asks for more than it has: Bound, and
// its request above status.capacity. Only such claims are looked at.
func NeedsResize(claim *v1.PersistentVolumeClaim) bool {
	if claim.Status.Phase != v1.ClaimBound || claim.Spec.VolumeName == "" {
		return false
	}
	request := claim.Spec.Resources.Requests[v1.ResourceStorage]
	capacity := claim.Status.Capacity[v1.ResourceStorage]
	return request.Cmp(capacity) > 0
}

// BoundTo says whether the PV is bound back to the claim: its claimRef
// names the claim's namespace, name and UID. A claim's spec.volumeName is
// written by its user and may name any PV; only the binder's claimRef
// makes that volume the claim's to expand or modify. The resizer and the
// modifier both check it here, before acting on a claim's volume. Unlike
// binding.IsBoundToClaim it takes no claimRef without a UID: a PV
// pre-bound by name is not bound yet.
func BoundTo(pv *v1.PersistentVolume, claim *v1.PersistentVolumeClaim) bool {
	return pv.Spec.ClaimRef != nil && pv.Spec.ClaimRef.UID != "" && binding.IsBoundToClaim(pv, claim)
}
