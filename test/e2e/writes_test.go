package e2e

import (
	"math"
	"testing"

	"github.com/volplane/volplane/internal/stacktest"
)

// The API server creates every PV in phase Pending. Binding it must not
// spend a write on marking it Available first: four writes per bind, never
// five, whether the PV comes after its claim or both wait for the binder.
func TestBindingAFreshVolumeTakesFourWrites(t *testing.T) {
	cases := map[string]bool{"PV created after the claim": false, "both created before the binder starts": true}
	for name, before := range cases {
		t.Run(name, func(t *testing.T) {
			withoutSharedBinder(t)
			e := newEnv(t)
			counter := &writeBudget{allowed: math.MaxInt64, paths: []string{
				"/persistentvolumes/" + e.ns + "-fresh",
				"/namespaces/" + e.ns + "/persistentvolumeclaims/data",
			}}
			rc := counter.config(stacktest.ControlPlane(t).RESTConfig)
			if !before {
				b := startBinder(rc, 4)
				defer b.Stop()
			}
			e.createClaim(e.claim("data", "1Gi"))
			if !before {
				e.waitClaimSeen("data")
			}
			e.createPV(e.pv("fresh", "1Gi"))
			if before {
				b := startBinder(rc, 4)
				defer b.Stop()
			}
			e.waitBound("data", e.ns+"-fresh")
			if n := counter.done.Load(); n != 4 {
				t.Errorf("binding took %d writes to the PV and claim, want 4", n)
			}
		})
	}
}
