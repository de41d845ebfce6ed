// Package handoff runs the expander loop (kube-controller-manager's
// persistentvolume-expander) end to end against the embedded, real
// kube-apiserver. No driver is needed: the expander calls none. Tests make
// bound claims by hand (as the binder would leave them: claim and PV
// pointing at each other, both Bound, the claim's capacity set), grow the
// claim's request as a user would (through the API server's resize
// admission and validation), and check the events and writes the
// reference's expander would have made.
//
// Each test runs its own expander through a client that logs its writes;
// events go through a client of their own, as in `volplane controller`.
package handoff

import (
	"testing"

	"github.com/volplane/volplane/test/e2e/support"
)

func TestMain(m *testing.M) {
	support.Main(m, 0)
}
