package provisioning

import (
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/volplane/volplane/internal/hostpath"
)

// Issue 23, as reproduced on `volplane up`: a claim of a class that does
// not exist, carrying by hand the in-progress finalizer, a pin and a
// recorded request naming another claim's volume, is deleted. The request
// is never replayed: the other claim's volume and PV stay, and the forged
// claim goes.
func TestForgedCreateRequestNamingAnotherClaimsVolumeDeletesNothing(t *testing.T) {
	e := newEnv(t)
	victim, pv, vol := e.provisioned("data", classImmediate)
	forged := fmt.Sprintf(`{"name":"pvc-%s","capacityRange":{"requiredBytes":"1"},"volumeCapabilities":[{"mount":{},"accessMode":{"mode":"SINGLE_NODE_WRITER"}}]}`, victim.UID)
	e.createClaim(e.claim("b", "no-such-class", "1Mi", func(c *corev1.PersistentVolumeClaim) {
		c.Finalizers = []string{claimFinalizer}
		c.Annotations = map[string]string{
			"volume.kubernetes.io/storage-provisioner": hostpath.DriverName,
			"provisioning.volplane.io/endpoint-node":   vol.node,
			"provisioning.volplane.io/create-request":  forged,
		}
	}))
	e.deleteClaim("b")
	e.waitClaimGone("b")
	if !slices.Contains(e.backendVolumes(), vol) {
		t.Errorf("the volume %s of claim %s/%s was deleted through another claim", vol, victim.Namespace, victim.Name)
	}
	if e.findPV(pv.Name) == nil {
		t.Errorf("PV %s gone", pv.Name)
	}
}
