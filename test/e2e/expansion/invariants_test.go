package expansion

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/internal/hostpath"
	"github.com/volplane/volplane/internal/stacktest"
)

// checkInvariants waits until no invariant of expansion is broken across
// the cluster; newEnv runs it when each test ends.
func (e *env) checkInvariants() {
	e.t.Helper()
	stacktest.Eventually(e.t, "no expansion invariant violated", func() string {
		return strings.Join(e.violations(), "; ")
	}, nil)
}

// violations are the broken invariants, for every Bound claim of the
// driver: a claim that reports more than its PV holds, a PV that says more
// than the backend volume holds (volumes never shrink, and a PV is grown
// only after its volume), and a resize status left on a claim that asks
// for nothing more.
func (e *env) violations() []string {
	claims, err := e.client.CoreV1().PersistentVolumeClaims("").List(e.ctx, metav1.ListOptions{})
	if err != nil {
		return []string{err.Error()}
	}
	backend, err := e.backendSizes()
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	for _, c := range claims.Items {
		if c.Status.Phase != corev1.ClaimBound {
			continue
		}
		pv, err := e.client.CoreV1().PersistentVolumes().Get(e.ctx, c.Spec.VolumeName, metav1.GetOptions{})
		if err != nil || pv.Spec.CSI == nil || pv.Spec.CSI.Driver != hostpath.DriverName {
			continue
		}
		name := c.Namespace + "/" + c.Name
		pvSize, claimSize := pv.Spec.Capacity.Storage(), c.Status.Capacity.Storage()
		if claimSize.Cmp(*pvSize) > 0 {
			out = append(out, fmt.Sprintf("claim %s reports %s, its PV %s", name, claimSize.String(), pvSize.String()))
		}
		if have, ok := backend[pv.Spec.CSI.VolumeHandle]; !ok || pvSize.Cmp(have) > 0 {
			out = append(out, fmt.Sprintf("PV %s says %s, the backend holds %s", pv.Name, pvSize.String(), have.String()))
		}
		request := c.Spec.Resources.Requests.Storage()
		if request.Cmp(*claimSize) <= 0 && c.Status.AllocatedResourceStatuses != nil {
			out = append(out, fmt.Sprintf("claim %s at rest with resize status %v", name, c.Status.AllocatedResourceStatuses))
		}
	}
	return out
}

// backendSizes are the driver's volumes by ID.
func (e *env) backendSizes() (map[string]resource.Quantity, error) {
	entries, err := bed.pool.Endpoints(hostpath.DriverName)[0].ListVolumes(e.ctx)
	if err != nil {
		return nil, fmt.Errorf("ListVolumes: %w", err)
	}
	out := map[string]resource.Quantity{}
	for _, en := range entries {
		out[en.GetVolume().GetVolumeId()] = *resource.NewQuantity(en.GetVolume().GetCapacityBytes(), resource.BinarySI)
	}
	return out, nil
}
