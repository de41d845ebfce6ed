// Package e2e runs the binder against the embedded, real kube-apiserver and
// checks what a user would see: the final objects and the events. Tests run
// one at a time against one binder; each works in its own namespace and
// cleans up its PVs, and every test ends with the invariant checker.
package e2e

import (
	"context"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/volplane/volplane/internal/cluster"
	"github.com/volplane/volplane/internal/controller/manager"
	"github.com/volplane/volplane/internal/stacktest"
	"github.com/volplane/volplane/test/e2e/support"
)

// sharedBinder is the binder most tests run against. Tests that need a
// binder of their own (crash points, races, benchmarks) stop it first and
// start it again when done.
var sharedBinder *stacktest.Loops

func TestMain(m *testing.M) {
	support.Main(m, 2, func(cp *cluster.ControlPlane) (func(), error) {
		sharedBinder = startBinder(cp.RESTConfig, 4)
		return func() { _ = sharedBinder.Stop() }, nil
	})
}

// startBinder runs one binder in this process, as `volplane up` runs it
// but with a short resync so that tests of the safety net stay quick; its
// Stop may be called twice.
func startBinder(rc *rest.Config, workers int) *stacktest.Loops {
	return stacktest.StartLoops(manager.Config{
		REST: rc, Controllers: []string{manager.Binder},
		Workers: workers, ResyncPeriod: 2 * time.Second,
	})
}

// withoutSharedBinder stops the shared binder for the rest of the test.
func withoutSharedBinder(t testing.TB) {
	cp := stacktest.ControlPlane(t)
	if err := sharedBinder.Stop(); err != nil {
		t.Fatalf("stop shared binder: %v", err)
	}
	t.Cleanup(func() { sharedBinder = startBinder(cp.RESTConfig, 4) })
}

// runManager runs the loops of cfg (by default the binder, against the test
// control plane) until the test ends, when they must stop cleanly. It
// returns the base URL of the metrics server, "" without cfg.MetricsAddr.
func runManager(t testing.TB, cfg manager.Config) string {
	t.Helper()
	if cfg.REST == nil {
		cfg.REST = stacktest.ControlPlane(t).RESTConfig
	}
	if cfg.Controllers == nil {
		cfg.Controllers = []string{manager.Binder}
	}
	addr := make(chan string, 1)
	if cfg.MetricsAddr != "" {
		cfg.Ready = func(a string) { addr <- a }
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- manager.Run(ctx, cfg) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("controller stopped with %v", err)
		}
	})
	if cfg.MetricsAddr == "" {
		return ""
	}
	return "http://" + <-addr
}
