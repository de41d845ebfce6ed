package invariants

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Resized are the promises of expansion at rest, for every Bound claim
// of a listed driver: the claim reports no more than its PV holds, the PV
// says no more than its backend volume holds (volumes never shrink, and a
// PV is grown only after its volume), and a claim that asks for nothing
// more carries no resize status.
func Resized(s State) []string {
	var out []string
	for c, pv := range s.boundClaims() {
		name := c.Namespace + "/" + c.Name
		pvSize, claimSize := pv.Spec.Capacity.Storage(), c.Status.Capacity.Storage()
		if claimSize.Cmp(*pvSize) > 0 {
			out = append(out, fmt.Sprintf("claim %s reports %s, its PV %s", name, claimSize.String(), pvSize.String()))
		}
		have, ok := s.capacity(Volume{pv.Spec.CSI.Driver, pv.Spec.CSI.VolumeHandle})
		if held := resource.NewQuantity(have, resource.BinarySI); !ok || pvSize.Cmp(*held) > 0 {
			out = append(out, fmt.Sprintf("PV %s says %s, the backend holds %s", pv.Name, pvSize.String(), held.String()))
		}
		request := c.Spec.Resources.Requests.Storage()
		if request.Cmp(*claimSize) <= 0 && c.Status.AllocatedResourceStatuses != nil {
			out = append(out, fmt.Sprintf("claim %s at rest with resize status %v", name, c.Status.AllocatedResourceStatuses))
		}
	}
	return out
}

// capacity is the size a backend lists for v, and whether one holds it.
func (s State) capacity(v Volume) (int64, bool) {
	for _, b := range s.Backends {
		if b.Driver != v.Driver {
			continue
		}
		for _, id := range b.VolumeIDs {
			if id == v.Handle {
				return b.Capacity[id], true
			}
		}
	}
	return 0, false
}
