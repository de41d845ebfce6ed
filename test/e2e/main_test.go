// Package e2e runs the binder against the embedded, real kube-apiserver and
// checks what a user would see: the final objects and the events. Tests run
// one at a time against one binder; each works in its own namespace and
// cleans up its PVs, and every test ends with the invariant checker.
package e2e

import (
	"context"
	"testing"
	"time"

	"github.com/volplane/volplane/internal/cluster"
	"github.com/volplane/volplane/internal/cluster/clustertest"
	"github.com/volplane/volplane/internal/controller/manager"
)

func TestMain(m *testing.M) {
	clustertest.Main(m, 2, startBinder)
}

// startBinder runs the binder as `volplane up` does, with a short resync so
// that tests of the safety net stay quick.
func startBinder(cp *cluster.ControlPlane) (func(), error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- manager.Run(ctx, manager.Config{
			REST: cp.RESTConfig, Controllers: []string{manager.Binder},
			Workers: 4, ResyncPeriod: 2 * time.Second,
		})
	}()
	return func() { cancel(); <-done }, nil
}
