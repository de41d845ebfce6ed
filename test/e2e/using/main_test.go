// Package using runs the "Using" part of the lifecycle end to end, with
// everything `volplane up` runs (stacktest.Stack): the bundled drivers
// (node-local and network), the node agent of every node and every loop,
// against the embedded, real kube-apiserver, kube-scheduler and
// kube-controller-manager. Pods go Running because the node agent publishes
// their volumes; network volumes are attached by attachdetach and the
// attacher. Mounts are recorded by a FakeMounter shared by the drivers.
//
// Tests run one at a time, each in its own namespace, and each ends with
// the invariant checker.
package using

import (
	"testing"
	"time"

	"github.com/volplane/volplane/internal/cluster"
	"github.com/volplane/volplane/internal/controller/manager"
	"github.com/volplane/volplane/internal/stacktest"
	"github.com/volplane/volplane/test/e2e/support"
)

// unmountWait is attachdetach's wait for an unwanted volume to be
// unmounted before a forced detach, shortened from 6 minutes.
const unmountWait = 3 * time.Second

// stack is the package's running stack.
var stack *stacktest.Stack

func TestMain(m *testing.M) {
	support.StackMain(m, 3, "vp-use-", stacktest.StackConfig{
		Loops: func(c *manager.Config) { c.MaxWaitForUnmount = unmountWait },
	}, func(_ *cluster.ControlPlane, s *stacktest.Stack) error { stack = s; return nil })
}
