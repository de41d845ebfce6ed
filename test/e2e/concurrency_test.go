package e2e

import (
	"fmt"
	"math"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/internal/stacktest"
)

// Many claims race for fewer PVs with many workers: every PV ends with at
// most one claim, and a claim ends Bound exactly when a PV fit it.
func TestClaimsRacingForFewerVolumesNeverShareOne(t *testing.T) {
	withoutSharedBinder(t)
	e := newEnv(t)
	const pvs, claims, tooBig = 30, 45, 5
	parallel(pvs, func(i int) { e.createPV(e.pv(fmt.Sprintf("pv-%02d", i), "1Gi")) })
	parallel(claims, func(i int) { e.createClaim(e.claim(fmt.Sprintf("c-%02d", i), "1Gi")) })
	parallel(tooBig, func(i int) { e.createClaim(e.claim(fmt.Sprintf("big-%02d", i), "5Gi")) })

	racing := startBinder(stacktest.ControlPlane(t).RESTConfig, 16)
	defer racing.Stop()

	e.eventually("every PV bound", func() string {
		list, err := e.client.CoreV1().PersistentVolumes().List(e.ctx, metav1.ListOptions{LabelSelector: "e2e-ns=" + e.ns})
		if err != nil {
			return err.Error()
		}
		for _, pv := range list.Items {
			if pv.Status.Phase != v1.VolumeBound {
				return pv.Name + " is " + string(pv.Status.Phase)
			}
		}
		return ""
	})
	e.eventually("claims settled", func() string {
		list, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).List(e.ctx, metav1.ListOptions{})
		if err != nil {
			return err.Error()
		}
		bound, bigBound := 0, 0
		for _, c := range list.Items {
			if c.Status.Phase != v1.ClaimBound {
				continue
			}
			bound++
			if c.Spec.Resources.Requests.Storage().Cmp(*e.pv("x", "1Gi").Spec.Capacity.Storage()) > 0 {
				bigBound++
			}
		}
		if bigBound > 0 {
			t.Fatalf("%d claims bigger than every PV are Bound", bigBound)
		}
		if want := int(math.Min(pvs, claims)); bound != want {
			return fmt.Sprintf("%d claims Bound, want %d", bound, want)
		}
		return ""
	})
	// The invariant checker (no PV with two claims, every Bound claim
	// pointed back at) runs when the test ends.
}

// Claims naming their PV in spec.volumeName race claims matched
// automatically for the same PVs: a named claim decides without a
// reservation, so only the check under the PV's lock keeps it from
// overwriting a claimRef just written for another claim. Every PV ends with
// exactly one claim, and the invariant checker finds no PV claimed twice.
func TestNamedAndMatchedClaimsRacingNeverShareAVolume(t *testing.T) {
	withoutSharedBinder(t)
	e := newEnv(t)
	const pvs = 10
	parallel(pvs, func(i int) { e.createPV(e.pv(fmt.Sprintf("pv-%02d", i), "1Gi")) })
	parallel(pvs, func(i int) {
		e.createClaim(e.claim(fmt.Sprintf("named-%02d", i), "1Gi", claimVolume(fmt.Sprintf("pv-%02d", i))))
	})
	parallel(2*pvs, func(i int) { e.createClaim(e.claim(fmt.Sprintf("auto-%02d", i), "1Gi")) })

	racing := startBinder(stacktest.ControlPlane(t).RESTConfig, 16)
	defer racing.Stop()

	e.eventually("every PV bound to one claim that points back", func() string {
		list, err := e.client.CoreV1().PersistentVolumes().List(e.ctx, metav1.ListOptions{LabelSelector: "e2e-ns=" + e.ns})
		if err != nil {
			return err.Error()
		}
		for _, pv := range list.Items {
			if pv.Status.Phase != v1.VolumeBound || pv.Spec.ClaimRef == nil {
				return pv.Name + " is " + string(pv.Status.Phase)
			}
			if c := e.getClaim(pv.Spec.ClaimRef.Name); c.Spec.VolumeName != pv.Name || c.Status.Phase != v1.ClaimBound {
				return fmt.Sprintf("%s points at %s, which is %s on %q", pv.Name, c.Name, c.Status.Phase, c.Spec.VolumeName)
			}
		}
		return ""
	})
	e.eventually("exactly one Bound claim per PV", func() string {
		list, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).List(e.ctx, metav1.ListOptions{})
		if err != nil {
			return err.Error()
		}
		bound := 0
		for _, c := range list.Items {
			if c.Status.Phase == v1.ClaimBound {
				bound++
			}
		}
		if bound != pvs {
			return fmt.Sprintf("%d claims Bound, want %d", bound, pvs)
		}
		return ""
	})
}

func parallel(n int, f func(i int)) {
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { f(i) })
	}
	wg.Wait()
}
