package explain

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/volplane/volplane/internal/explain"
	"github.com/volplane/volplane/internal/heartbeat"
	"github.com/volplane/volplane/internal/hostpath"
	"github.com/volplane/volplane/internal/inspect"
	"github.com/volplane/volplane/internal/stacktest"
)

// On a running stack (the loops of `volplane up`), explain names the
// snapshotter serving each bundled driver and when it last reported, from
// the snapshotter row's heartbeat, as it does for a provisioner.
func TestExplainNamesTheSnapshotterServingEachDriver(t *testing.T) {
	ctx := context.Background()
	drivers := []string{hostpath.DriverName, hostpath.NetworkDriverName}
	stacktest.Eventually(t, "each driver's snapshotter reported", func() string {
		f := &explain.Facts{Now: time.Now()}
		if err := inspect.Snapshotters(ctx, stack.CP.Client, f, drivers...); err != nil {
			return err.Error()
		}
		for _, d := range drivers {
			p := f.Snapshotters[d]
			lease := "(Lease kube-system/" + heartbeat.Snapshotter.LeaseName(d, "") + " renewed "
			if !p.Serving || len(p.Nodes) != 0 || !strings.HasPrefix(p.Note, d+" is served by ") || !strings.Contains(p.Note, lease) {
				return fmt.Sprintf("%s: %+v", d, p)
			}
		}
		return ""
	}, stack.EndedEarly)
}
