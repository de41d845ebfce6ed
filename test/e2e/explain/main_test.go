// Package explain checks `volplane explain` end to end: scenarios are built
// in the embedded control plane with everything `volplane up` runs
// (stacktest.Stack), and the reports, as a person and as a script read
// them (-o table and -o json), are compared with golden files under
// testdata (rewrite them with -update, then read the diff).
//
// A claim's report counts every volume of the cluster, so each test starts
// once the volumes of earlier tests are gone and removes its own.
package explain

import (
	"flag"
	"testing"

	"github.com/volplane/volplane/internal/cluster"
	"github.com/volplane/volplane/internal/stacktest"
	"github.com/volplane/volplane/test/e2e/support"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata")

// stack is the package's running stack.
var stack *stacktest.Stack

func TestMain(m *testing.M) {
	support.StackMain(m, 2, "vp-explain-", stacktest.StackConfig{Capacity: 50 << 30},
		func(_ *cluster.ControlPlane, s *stacktest.Stack) error { stack = s; return nil })
}
