package rbac

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/volplane/volplane/internal/heartbeat"
	"github.com/volplane/volplane/internal/hostpath"
	"github.com/volplane/volplane/internal/inspect"
	"github.com/volplane/volplane/internal/stacktest"
)

// A snapshotter deployed alone (the node role's, one per node, and the CSI
// sidecar's of a central driver, each `--controllers=snapshotter`) keeps
// its heartbeat Leases with its role's permissions, and deletes them when
// it stops; none of its calls is forbidden (start fails the test if one
// is).
func TestASnapshotterAloneBeatsWithItsRolesPermissions(t *testing.T) {
	ctx := context.Background()
	rs, err := roles(bed.deploy)
	if err != nil {
		t.Fatal(err)
	}
	var alone []role
	for _, r := range rs {
		if r.serviceAccount == "volplane-controller" {
			continue // runs no snapshotter
		}
		r.args = slices.Clone(r.args)
		i := slices.IndexFunc(r.args, func(a string) bool { return strings.HasPrefix(a, "--controllers=") })
		if i < 0 {
			t.Fatalf("%s runs no --controllers: %q", r.serviceAccount, r.args)
		}
		r.args[i] = "--controllers=snapshotter"
		alone = append(alone, r)
	}
	runs := start(t, ctx, alone)
	alive := func() error {
		for _, r := range runs {
			if err := r.endedEarly(); err != nil {
				return fmt.Errorf("%s: %w", r.serviceAccount, err)
			}
		}
		return nil
	}
	find := func(driver string) heartbeat.Presence {
		leases, err := inspect.RoleLeases(ctx, bed.stack.CP.Client.CoordinationV1(), heartbeat.Snapshotter, driver)
		if err != nil {
			t.Fatal(err)
		}
		return heartbeat.Snapshotter.Find(leases, driver, time.Now())
	}
	nodes := slices.Sorted(slices.Values(bed.stack.CP.Nodes))
	stacktest.Eventually(t, "the node snapshotters' heartbeats", func() string {
		if p := find(hostpath.DriverName); !p.Serving || !slices.Equal(p.Nodes, nodes) || len(p.Leases) != len(nodes) ||
			!strings.HasPrefix(p.Leases[0], "volplane-nodes/volplane-snapshotter-") {
			return fmt.Sprintf("%+v", p)
		}
		return ""
	}, alive)
	stacktest.Eventually(t, "the CSI sidecar's snapshotter heartbeat", func() string {
		want := "volplane-csi-sidecar/" + heartbeat.Snapshotter.LeaseName(hostpath.NetworkDriverName, "")
		if p := find(hostpath.NetworkDriverName); !p.Serving || len(p.Nodes) != 0 || !slices.Equal(p.Leases, []string{want}) {
			return fmt.Sprintf("%+v", p)
		}
		return ""
	}, alive)
	for _, r := range runs {
		if err := r.stop(); err != nil {
			t.Errorf("%s: the loops returned %v", r.serviceAccount, err)
		}
	}
	for _, d := range []string{hostpath.DriverName, hostpath.NetworkDriverName} {
		if p := find(d); len(p.Leases) != 0 {
			t.Errorf("after the snapshotters stopped, %s: %+v, want their Leases deleted", d, p)
		}
	}
}
