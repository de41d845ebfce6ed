// Package healthgate runs volume health end to end with the
// CSIVolumeHealth gate on, on the embedded kube-apiserver and
// kube-controller-manager (stacktest.MainWith) and on volplane's loops and
// node agent (manager.Config.Features), with everything `volplane up`
// runs (stacktest.Stack): an abnormal volume is written to the health
// fields Kubernetes 1.37 defines (the claim's status.healthStatus, the
// pod's status.volumeHealth, the CSINode's status.storageHealth) beside
// the events, and its return to normal clears them. A package of its own,
// so every other package keeps the default gates.
package healthgate

import (
	"testing"
	"time"

	"github.com/volplane/volplane/internal/cluster"
	"github.com/volplane/volplane/internal/controller/manager"
	"github.com/volplane/volplane/internal/features"
	"github.com/volplane/volplane/internal/stacktest"
	"github.com/volplane/volplane/test/e2e/support"
)

// period is the monitor's and the node agent's poll period here (1 minute
// by default in both).
const period = 300 * time.Millisecond

// gates is the suite's --feature-gates, for the API server and volplane.
const gates = string(features.CSIVolumeHealth) + "=true"

var (
	stack *stacktest.Stack
	// calls are the node services' NodeGetVolumeHealth requests.
	calls healthCalls
)

func TestMain(m *testing.M) {
	gated := func(c *manager.Config) {
		g := features.New()
		if err := g.Set(gates); err != nil {
			panic(err)
		}
		c.Features = g
	}
	cfg := stacktest.StackConfig{
		Loops: func(c *manager.Config) { gated(c); c.HealthMonitorInterval = period },
		Agent: func(c *manager.Config) {
			gated(c)
			c.NodeAgent.VolumeStatsAggPeriod = period
			c.MetricsAddr, c.Ready = "127.0.0.1:0", func(addr string) { agentMetrics.Store(addr) }
		},
		Interceptor: calls.intercept,
	}
	stacktest.MainWith(m, 2, stacktest.Options{FeatureGates: gates},
		support.StackSetup("vp-hg-", cfg, func(_ *cluster.ControlPlane, s *stacktest.Stack) error { stack = s; return nil }))
}
