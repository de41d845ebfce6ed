// Package health runs volume health end to end with everything `volplane
// up` runs (stacktest.Stack) against the embedded, real kube-apiserver:
// the bundled driver answers CSI 1.13's health RPCs, the health-monitor
// loop polls the controller and the node agent polls the node service,
// both at short periods. A volume made inaccessible behind the driver's
// back (its directory removed) is reported on its claim and its pod, and
// its repair clears the report.
package health

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/volplane/volplane/internal/cluster"
	"github.com/volplane/volplane/internal/controller/manager"
	"github.com/volplane/volplane/internal/stacktest"
	"github.com/volplane/volplane/test/e2e/support"
)

// period is the monitor's and the node agent's poll period here (1 minute
// by default in both).
const period = 300 * time.Millisecond

var stack *stacktest.Stack

// agentMetrics is the address of the node agent's /metrics.
var agentMetrics atomic.Value

func TestMain(m *testing.M) {
	support.StackMain(m, 1, "vp-hl-", stacktest.StackConfig{
		Loops: func(c *manager.Config) { c.HealthMonitorInterval = period },
		Agent: func(c *manager.Config) {
			c.NodeAgent.VolumeStatsAggPeriod = period
			c.MetricsAddr, c.Ready = "127.0.0.1:0", func(addr string) { agentMetrics.Store(addr) }
		},
	}, func(_ *cluster.ControlPlane, s *stacktest.Stack) error { stack = s; return nil })
}
