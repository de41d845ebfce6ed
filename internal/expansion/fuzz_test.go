package expansion

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/volplane/volplane/internal/quantity"
)

// FuzzDecide feeds Decide any sizes a claim's user can write (the request)
// and any the resizer or an administrator may have written (capacity,
// allocated size, PV capacity), in any resize status, with any memory.
// Whatever it decides, it never asks a driver for less than the volume
// has, never for a size a CSI request cannot carry, and never acts on a
// volume bound to another claim.
func FuzzDecide(f *testing.F) {
	f.Add("2Mi", "1Mi", "1Mi", "", "", uint8(0))
	f.Add("18446744074783293440", "1Gi", "1Gi", "", "", uint8(0))
	f.Add("2Mi", "1Mi", "1Mi", "18446744074783293440", string(v1.PersistentVolumeClaimControllerResizeInProgress), uint8(0))
	f.Fuzz(func(t *testing.T, request, capacity, pvSize, allocated, status string, flags uint8) {
		c := claim()
		if !setSize(c.Spec.Resources.Requests, request) || !setSize(c.Status.Capacity, capacity) {
			return
		}
		if allocated != "" {
			c.Status.AllocatedResources = v1.ResourceList{}
			if !setSize(c.Status.AllocatedResources, allocated) {
				return
			}
		}
		if status != "" {
			resizeStatus(v1.ClaimResourceStatus(status))(c)
		}
		if flags&1 != 0 {
			withCondition(v1.PersistentVolumeClaimFileSystemResizePending, "")(c)
		}
		p := pv()
		if !setSize(p.Spec.Capacity, pvSize) {
			return
		}
		if flags&2 != 0 {
			p.Spec.ClaimRef.UID = "another claim"
		}
		fs := facts(c, p, func(f *Facts) {
			f.FinalErrorSeen, f.InfeasibleBackoff, f.OfflineInUse = flags&4 != 0, flags&8 != 0, flags&16 != 0
			f.ControllerExpand, f.NodeExpand = flags&32 == 0, flags&64 == 0
		})
		d := Decide(fs)
		have := p.Spec.Capacity[v1.ResourceStorage]
		switch {
		case flags&2 != 0 && d.Action != None:
			t.Fatalf("acted on a volume bound to another claim: %v", d)
		case d.Action == Expand && d.Size.Cmp(have) < 0:
			t.Fatalf("asked for %s, below the volume's %s", d.Size.String(), have.String())
		case d.Action == Expand:
			if _, ok := quantity.Bytes(d.Size); !ok {
				t.Fatalf("asked for %s, which no CSI request carries", d.Size.String())
			}
		case d.Action == Infeasible:
			if _, ok := quantity.Bytes(d.Size); ok {
				t.Fatalf("refused %s, which a CSI request carries", d.Size.String())
			}
		}
	})
}

// setSize sets the storage size s in list, false if s is no quantity.
func setSize(list v1.ResourceList, s string) bool {
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return false
	}
	list[v1.ResourceStorage] = q
	return true
}
