package manager

import (
	"slices"
	"testing"

	snapfake "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned/fake"
	snapinformers "github.com/kubernetes-csi/external-snapshotter/client/v8/informers/externalversions"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"

	"github.com/volplane/volplane/internal/controller/inflight"
	"github.com/volplane/volplane/internal/csi"
)

// Every loop --controllers names is a row of the table that builds over
// one wiring, and each of its loops is counted for /readyz.
func TestEveryKnownRowBuildsOverOneWiring(t *testing.T) {
	cfg := Config{REST: &rest.Config{Host: "https://127.0.0.1:1"}, Controllers: Known(),
		CSIEndpoints: []string{"unix:///run/csi.sock"}}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	rows := selectedRows(cfg)
	// Rows selected otherwise (the group snapshot rows run with the
	// snapshot rows) are built too, but --controllers does not name them.
	offered := slices.DeleteFunc(slices.Clone(rows), func(r row) bool { return r.selected != nil })
	if names := rowNames(offered); !slices.Equal(names, Known()) {
		t.Fatalf("selected rows %v, want %v", names, Known())
	}
	client := fake.NewClientset()
	client.Resources = snapshotAPI()
	events := record.NewBroadcaster()
	defer events.Shutdown()
	pool := csi.NewPool(&csi.Endpoint{Info: csi.Info{Driver: "d.csi.test", Controller: true, ControllerExpand: true}})
	snaps := snapfake.NewSimpleClientset()
	w := wiring{Config: cfg, Client: client, Informers: informers.NewSharedInformerFactory(client, 0),
		Snapshots: snaps, SnapshotInformers: snapinformers.NewSharedInformerFactory(snaps, 0),
		Events: events, Metrics: prometheus.NewRegistry(), Pool: pool, Ledger: inflight.New()}
	l := &loops{want: len(rows)}
	runs, err := build(w, rows, l)
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	// The provisioner row adds its heartbeat, which is not a loop.
	if len(l.running) != len(runs)-1 || len(l.running) < len(rows) || l.ready() {
		t.Errorf("%d runnables, %d counted, ready %v: want every loop counted and not ready before it runs",
			len(runs), len(l.running), l.ready())
	}
}

func rowNames(rows []row) []string {
	var names []string
	for _, r := range rows {
		names = append(names, r.name)
	}
	return names
}
