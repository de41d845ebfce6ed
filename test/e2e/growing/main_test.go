// Package growing grows claims end to end with everything `volplane up`
// runs (clustertest.Stack): the bundled drivers (node-local and network),
// the node agent and every loop (the expander's hand-off, the resizer's
// controller expansion, the node agent's node expansion) against the
// embedded, real kube-apiserver, kube-scheduler and
// kube-controller-manager. Each test works in its own namespace.
package growing

import (
	"context"
	"os"
	"testing"

	"github.com/volplane/volplane/internal/cluster"
	"github.com/volplane/volplane/internal/cluster/clustertest"
)

// stack is the package's running stack.
var stack *clustertest.Stack

func TestMain(m *testing.M) {
	clustertest.Main(m, 1, setUp)
}

func setUp(cp *cluster.ControlPlane) (func(), error) {
	dir, err := os.MkdirTemp("", "vp-grow-") // short: unix socket paths are limited
	if err != nil {
		return nil, err
	}
	s, err := clustertest.StartStack(context.Background(), cp, clustertest.StackConfig{DataDir: dir})
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	stack = s
	return func() {
		s.Stop()
		os.RemoveAll(dir)
	}, nil
}
