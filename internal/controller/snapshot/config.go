package snapshot

import (
	"errors"

	snapclient "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	snapinformers "github.com/kubernetes-csi/external-snapshotter/client/v8/informers/externalversions"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/volplane/volplane/internal/controller/loop"
)

// EventComponent is the source of the loop's events, the reference's.
const EventComponent = "snapshot-controller"

// Config is what the loop needs; every dependency is passed in.
type Config struct {
	// Client writes claims; Snapshots writes the snapshot API.
	Client    kubernetes.Interface
	Snapshots snapclient.Interface
	// Informers and SnapshotInformers must not be started yet.
	Informers         informers.SharedInformerFactory
	SnapshotInformers snapinformers.SharedInformerFactory
	// Groups says the group snapshot API is served: its informers are
	// read (a member of a live group is not deleted alone).
	Groups bool
	// Recorder records the events; its source should be EventComponent.
	Recorder record.EventRecorder
	// Settings: Workers default to the reference's 10 (DefaultWorkers),
	// the rest to loop's; the loop has no resync.
	loop.Settings
	// Metrics, if set, takes the runner's stuck-key metrics.
	Metrics prometheus.Registerer
	// Clock stamps status errors; the wall clock when nil.
	Clock clock.PassiveClock
}

// DefaultWorkers is the reference's worker count (cmd/snapshot-controller
// --worker-threads), not loop.DefaultWorkers.
const DefaultWorkers = 10

func (c Config) withDefaults() (Config, error) {
	if c.Client == nil || c.Snapshots == nil || c.Informers == nil || c.SnapshotInformers == nil || c.Recorder == nil {
		return c, errors.New("snapshot: Client, Snapshots, Informers, SnapshotInformers and Recorder are required")
	}
	if c.Workers <= 0 {
		c.Workers = DefaultWorkers
	}
	c.Settings = c.Settings.WithDefaults()
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	return c, nil
}
