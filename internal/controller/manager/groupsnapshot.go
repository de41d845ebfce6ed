package manager

import (
	"fmt"
	"slices"

	snapscheme "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned/scheme"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"

	"github.com/volplane/volplane/internal/controller/groupsnapshot"
	"github.com/volplane/volplane/internal/controller/loop"
)

// The group snapshot rows run with the single-snapshot rows they belong
// to (the reference runs them in the same two processes), so they are not
// offered to --controllers.
const (
	groupSnapshotRow    = "groupsnapshot"
	groupSnapshotterRow = "groupsnapshotter"
)

func runsGroupSnapshot(c Config) bool    { return slices.Contains(c.Controllers, Snapshot) }
func runsGroupSnapshotter(c Config) bool { return slices.Contains(c.Controllers, Snapshotter) }

// snapshotRecorder records events on objects of the snapshot API as well
// as core ones: the recorder finds an object's kind in its scheme.
func snapshotRecorder(w wiring, component string) (record.EventRecorder, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := snapscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	return w.Events.NewRecorder(s, v1.EventSource{Component: component}), nil
}

func groupConfig(w wiring, component string) (groupsnapshot.Config, error) {
	rec, err := snapshotRecorder(w, component)
	if err != nil {
		return groupsnapshot.Config{}, fmt.Errorf("%s: %w", component, err)
	}
	return groupsnapshot.Config{
		Client: w.Client, Snapshots: w.Snapshots, Informers: w.Informers, SnapshotInformers: w.SnapshotInformers,
		Recorder: rec, Pool: w.Pool, NodeName: w.Config.nodeName(), Metrics: w.Metrics,
		Settings: loop.Settings{Workers: w.Config.Workers},
	}, nil
}

// newGroupSnapshot builds the snapshot-controller's group half.
func newGroupSnapshot(w wiring) ([]Runnable, error) {
	cfg, err := groupConfig(w, groupsnapshot.ControllerComponent)
	if err != nil {
		return nil, err
	}
	c, err := groupsnapshot.NewController(cfg)
	if err != nil {
		return nil, err
	}
	return []Runnable{c}, nil
}

// newGroupSnapshotter builds the csi-snapshotter's group half over the
// pool's drivers.
func newGroupSnapshotter(w wiring) ([]Runnable, error) {
	cfg, err := groupConfig(w, groupsnapshot.SidecarComponent)
	if err != nil {
		return nil, err
	}
	s, err := groupsnapshot.NewSidecar(cfg)
	if err != nil {
		return nil, err
	}
	return []Runnable{s}, nil
}
