package support

import (
	"context"
	"testing"

	"github.com/volplane/volplane/internal/cluster"
	"github.com/volplane/volplane/internal/stacktest"
)

// Setup starts what a suite's tests need once its control plane is ready;
// teardown stops it after the tests.
type Setup = func(*cluster.ControlPlane) (teardown func(), err error)

// Main is the TestMain of a suite: one embedded control plane with nodes
// simulated nodes for the whole test binary, then each setup, the tests,
// and every teardown.
func Main(m *testing.M, nodes int, setups ...Setup) {
	stacktest.Main(m, nodes, setups...)
}

// StackMain is the TestMain of a suite that runs everything `volplane up`
// runs (stacktest.Stack): the control plane, then the stack of cfg in a
// temporary directory named from prefix (keep it short: unix socket paths
// are limited), handed to started before the tests run (to keep it, and to
// set up what the suite needs on top). An error of started stops the run.
func StackMain(m *testing.M, nodes int, prefix string, cfg stacktest.StackConfig, started func(*cluster.ControlPlane, *stacktest.Stack) error) {
	Main(m, nodes, StackSetup(prefix, cfg, started))
}

// StackSetup is StackMain's Setup, for a suite that sets up something
// before the stack starts.
func StackSetup(prefix string, cfg stacktest.StackConfig, started func(*cluster.ControlPlane, *stacktest.Stack) error) Setup {
	return func(cp *cluster.ControlPlane) (func(), error) {
		s, stop, err := stacktest.StartTempStack(context.Background(), cp, prefix, cfg)
		if err != nil {
			return nil, err
		}
		if err := started(cp, s); err != nil {
			stop()
			return nil, err
		}
		return stop, nil
	}
}
