package manager

import (
	"context"
	"slices"

	snapclient "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	snapinformers "github.com/kubernetes-csi/external-snapshotter/client/v8/informers/externalversions"
	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"

	"github.com/volplane/volplane/internal/controller/inflight"
	"github.com/volplane/volplane/internal/csi"
)

// wiring is what every loop of one process is built over: the parts they
// share. A row's constructor takes what it needs from here; a loop that
// needs a setting of its own reads it from Config (the wiring carries it
// whole), so adding a loop never changes a constructor's signature.
type wiring struct {
	// Config is the manager's, validated.
	Config Config
	// Client writes to the API (protobuf, the manager's QPS budget).
	Client kubernetes.Interface
	// Informers is the one shared factory: a type is listed and watched
	// once per process, whatever the number of loops reading it.
	Informers informers.SharedInformerFactory
	// Snapshots writes the snapshot API (JSON: custom resources speak no
	// protobuf), within the same QPS budget as Client; SnapshotInformers is
	// its one shared factory, started with Informers.
	Snapshots         snapclient.Interface
	SnapshotInformers snapinformers.SharedInformerFactory
	// Events records through a client of its own (newBroadcaster).
	Events record.EventBroadcaster
	// Metrics is the process's registry, served on /metrics; loops hand it
	// on to their loop.Runner for the stuck-key metrics.
	Metrics prometheus.Registerer
	// Pool holds the dialed CSI drivers; nil unless a selected row needs
	// drivers.
	Pool *csi.Pool
	// Ledger is the capacity accounting the provisioner and the capacity
	// loop share (one per process).
	Ledger *inflight.Ledger
}

// Recorder records events with component as their source.
func (w wiring) Recorder(component string) record.EventRecorder {
	return w.Events.NewRecorder(scheme.Scheme, v1.EventSource{Component: component})
}

// Runnable is one thing a row runs until ctx ends. A Runnable that also
// has Ready() bool is a loop counted for /readyz.
type Runnable interface {
	Run(ctx context.Context) error
}

// runFunc runs a function as a Runnable not counted for /readyz (the
// heartbeat).
type runFunc func(ctx context.Context) error

func (f runFunc) Run(ctx context.Context) error { return f(ctx) }

// Needs says what a row needs beyond the cluster.
type Needs int

const (
	// NeedsCluster: the API server alone.
	NeedsCluster Needs = iota
	// NeedsDrivers: the CSI endpoints too, dialed before the loops start.
	NeedsDrivers
)

// row is one line of the manager's table: a loop (or a few run together)
// and how to build it.
type row struct {
	// name is the row's name in --controllers and in logs.
	name string
	// selected says whether cfg runs the row; nil means "when
	// --controllers names it". A row selected otherwise (by a field of
	// Config) is not offered to --controllers.
	selected func(cfg Config) bool
	needs    Needs
	// build constructs the row's runnables over the shared wiring. It
	// registers its informers and indexes; the factory starts after every
	// row is built.
	build func(w wiring) ([]Runnable, error)
}

// table is every loop the manager can run, in the order they are built.
// Adding a loop is one row here and one file (manager/<loop>.go) holding
// its constructor.
func table() []row {
	return []row{
		{name: Binder, build: newBinder},
		{name: Provisioner, needs: NeedsDrivers, build: newProvisioner},
		{name: Capacity, needs: NeedsDrivers, build: newCapacity},
		{name: PVCProtection, build: newClaimProtection},
		{name: PVProtection, build: newVolumeProtection},
		{name: EphemeralVolume, build: newEphemeralVolume},
		{name: VACProtection, build: newClassProtection},
		{name: AttachDetach, build: newAttachDetach},
		{name: Attacher, needs: NeedsDrivers, build: newAttacher},
		{name: Expander, build: newExpander},
		{name: Resizer, needs: NeedsDrivers, build: newResizer},
		{name: Snapshot, build: newSnapshot},
		{name: Snapshotter, needs: NeedsDrivers, build: newSnapshotter},
		{name: HealthMonitor, needs: NeedsDrivers, build: newHealthMonitor},
		{name: groupSnapshotRow, selected: runsGroupSnapshot, build: newGroupSnapshot},
		{name: groupSnapshotterRow, selected: runsGroupSnapshotter, needs: NeedsDrivers, build: newGroupSnapshotter},
		{name: NodeAgentLoop, selected: func(c Config) bool { return c.NodeAgent != nil }, build: newNodeAgent},
	}
}

// runs says whether cfg runs r.
func (r row) runs(cfg Config) bool {
	if r.selected != nil {
		return r.selected(cfg)
	}
	return slices.Contains(cfg.Controllers, r.name)
}

// selectedRows are the rows cfg runs, in table order.
func selectedRows(cfg Config) []row {
	var rows []row
	for _, r := range table() {
		if r.runs(cfg) {
			rows = append(rows, r)
		}
	}
	return rows
}

// Known lists the loops --controllers can name.
func Known() []string {
	var names []string
	for _, r := range table() {
		if r.selected == nil {
			names = append(names, r.name)
		}
	}
	return names
}

// needsDrivers says whether a row cfg runs calls CSI drivers.
func needsDrivers(cfg Config) bool {
	return slices.ContainsFunc(selectedRows(cfg), func(r row) bool { return r.needs == NeedsDrivers })
}

// build builds every selected row over w, counting its loops for /readyz,
// and returns what to run.
func build(w wiring, rows []row, l *loops) ([]Runnable, error) {
	var all []Runnable
	for _, r := range rows {
		parts, err := r.build(w)
		if err != nil {
			return nil, err
		}
		for _, p := range parts {
			if ready, ok := p.(interface{ Ready() bool }); ok {
				l.started(ready)
			}
		}
		all = append(all, parts...)
	}
	return all, nil
}
