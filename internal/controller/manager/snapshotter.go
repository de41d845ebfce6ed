package manager

import (
	"k8s.io/client-go/tools/record"

	"github.com/volplane/volplane/internal/controller/loop"
	"github.com/volplane/volplane/internal/controller/snapshotter"
	"github.com/volplane/volplane/internal/heartbeat"
)

// newSnapshotter builds the snapshotter loop (the csi-snapshotter
// sidecar's role) over the dialed drivers, each with its own event source.
// In node deployment it serves only this node's contents. Its heartbeat
// says it serves the drivers that take snapshots, as the provisioner's.
func newSnapshotter(w wiring) ([]Runnable, error) {
	s, err := snapshotter.New(snapshotter.Config{
		Client: w.Client, Snapshots: w.Snapshots, Informers: w.Informers, SnapshotInformers: w.SnapshotInformers,
		Pool: w.Pool,
		Recorder: func(driver string) record.EventRecorder {
			return w.Recorder(snapshotter.EventComponent(driver))
		},
		Settings: loop.Settings{Workers: w.Config.Workers, ResyncPeriod: w.Config.ResyncPeriod},
		NodeName: w.Config.nodeName(), Metrics: w.Metrics,
	})
	if err != nil {
		return nil, err
	}
	beat, err := newHeartbeat(w.Config, heartbeat.Snapshotter, s.Drivers())
	if err != nil || beat == nil {
		return []Runnable{s}, err
	}
	return []Runnable{s, beat}, nil
}
