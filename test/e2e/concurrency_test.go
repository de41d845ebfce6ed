package e2e

import (
	"fmt"
	"math"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/internal/cluster/clustertest"
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

	racing := startBinder(clustertest.ControlPlane(t).RESTConfig, 16)
	defer racing.stop()

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

func parallel(n int, f func(i int)) {
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { f(i) })
	}
	wg.Wait()
}
