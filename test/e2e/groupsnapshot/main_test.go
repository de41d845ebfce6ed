// Package groupsnapshot runs group snapshots end to end with everything
// `volplane up` runs (stacktest.Stack): the bundled drivers, the node
// agent and every loop (the snapshot and snapshotter rows bring the two
// group halves), against the embedded, real kube-apiserver. A group of
// claims picked by label is snapshotted through the node-local driver's
// GroupController service, its members are restored and the group is
// deleted, leaving nothing behind in the API or the driver.
package groupsnapshot

import (
	"context"
	"fmt"
	"slices"
	"testing"

	snapclient "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"

	"github.com/volplane/volplane/internal/cluster"
	"github.com/volplane/volplane/internal/controller/manager"
	"github.com/volplane/volplane/internal/csi"
	"github.com/volplane/volplane/internal/stacktest"
	"github.com/volplane/volplane/test/e2e/support"
)

var bed struct {
	stack *stacktest.Stack
	snaps snapclient.Interface
	pool  *csi.Pool
}

func TestMain(m *testing.M) {
	support.StackMain(m, 1, "vp-grp-", stacktest.StackConfig{}, func(cp *cluster.ControlPlane, s *stacktest.Stack) error {
		bed.stack = s
		var err error
		if bed.snaps, err = snapclient.NewForConfig(cp.RESTConfig); err != nil {
			return err
		}
		// The test's own view of the drivers, to see the backend (closed
		// with the process).
		if bed.pool, err = csi.DialPool(context.Background(), s.Drivers.Endpoints, nil); err != nil {
			return fmt.Errorf("dial drivers: %w", err)
		}
		return nil
	})
}

// needsSnapshotRows skips a test while the snapshot rows (which bring the
// group rows) are not among the loops the stack runs.
func needsSnapshotRows(t *testing.T) {
	t.Helper()
	if !slices.Contains(manager.Known(), manager.Snapshot) || !slices.Contains(manager.Known(), manager.Snapshotter) {
		t.Skip("the snapshot and snapshotter rows are not in the manager's table")
	}
}
