// Package dashboard checks deploy/dashboard.json against a running
// volplane: everything `volplane up` runs (stacktest.Stack, one node), its
// loops serving /metrics on 127.0.0.1 as the controller's and the node
// pods' do, after work that makes each metric the dashboard reads appear
// (a claim provisioned and bound, a network volume attached and grown, a
// provisioning the driver refuses, an available volume, a volume that no
// one can delete). Every metric a dashboard query names must be in the
// scrape, so none is missing or misnamed.
package dashboard

import (
	"testing"

	"github.com/volplane/volplane/internal/cluster"
	"github.com/volplane/volplane/internal/controller/manager"
	"github.com/volplane/volplane/internal/stacktest"
	"github.com/volplane/volplane/test/e2e/support"
)

// stack is the package's running stack; metricsAddr receives where its
// loops serve /metrics.
var (
	stack       *stacktest.Stack
	metricsAddr = make(chan string, 1)
)

func TestMain(m *testing.M) {
	support.StackMain(m, 1, "vp-dash-", stacktest.StackConfig{
		Loops: func(c *manager.Config) {
			c.MetricsAddr = "127.0.0.1:0"
			c.Ready = func(addr string) {
				select {
				case metricsAddr <- addr:
				default:
				}
			}
		},
	}, func(_ *cluster.ControlPlane, s *stacktest.Stack) error { stack = s; return nil })
}
