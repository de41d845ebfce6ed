// Package ephemeral runs the ephemeral-volume loop end to end, with
// pvc-protection beside it, against the embedded, real kube-apiserver and
// kube-controller-manager (whose garbage collector deletes a pod's claims
// with it; its own ephemeral-volume controller is off, as in `volplane
// up`). No driver runs: the claims name no StorageClass that exists and
// stay Pending, which is all the loop's rules need. No kubelet runs.
//
// Tests run one at a time, each in its own namespace.
package ephemeral

import (
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/volplane/volplane/internal/cluster"
	"github.com/volplane/volplane/internal/controller/manager"
	"github.com/volplane/volplane/internal/stacktest"
	"github.com/volplane/volplane/test/e2e/support"
)

var bed struct {
	rest  *rest.Config
	loops *stacktest.Loops
}

func TestMain(m *testing.M) {
	support.Main(m, 1, func(cp *cluster.ControlPlane) (func(), error) {
		bed.rest = cp.RESTConfig
		bed.loops = stacktest.StartLoops(manager.Config{REST: cp.RESTConfig,
			Controllers: []string{manager.EphemeralVolume, manager.PVCProtection}, Workers: 4, ResyncPeriod: 2 * time.Second})
		return func() { _ = bed.loops.Stop() }, nil
	})
}
