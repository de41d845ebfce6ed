// Package badinput feeds volplane bad input end to end: StorageClasses with
// malformed parameters, absurd sizes, claims and PVs with every optional
// field at its edge. Everything `volplane up` runs is running
// (stacktest.Stack: the bundled drivers, the node agent, every loop)
// against the embedded, real kube-apiserver, so each case shows what a user
// sees: the API server's rejection (which validation said no), or the
// event on the claim or PV that names the problem. After every table the
// loops must still be running and still provision and bind a normal claim.
//
// Each case asserts the exact observed result, so a change of behaviour
// fails here; where the behaviour is questionable the case says so.
package badinput

import (
	"testing"

	"github.com/volplane/volplane/internal/cluster"
	"github.com/volplane/volplane/internal/controller/manager"
	"github.com/volplane/volplane/internal/stacktest"
	"github.com/volplane/volplane/test/e2e/support"
)

// driverCapacity is what each bundled driver may hand out: room for every
// test's claims, and a claim can still ask for more than a driver has
// without being absurd.
const driverCapacity = 100 << 30

// stack is the package's running stack; writes logs the loops' API writes
// (across restarts), to tell a retry with backoff from a hot loop.
var (
	stack  *stacktest.Stack
	writes = stacktest.NewWriteLog(0, nil)
)

func TestMain(m *testing.M) {
	support.StackMain(m, 2, "vp-bad-", stacktest.StackConfig{
		Capacity: driverCapacity,
		Loops:    func(c *manager.Config) { c.REST.Wrap(writes.Wrap) },
	}, func(_ *cluster.ControlPlane, s *stacktest.Stack) error { stack = s; return nil })
}
