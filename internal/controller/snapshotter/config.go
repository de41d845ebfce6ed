package snapshotter

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
	"github.com/volplane/volplane/internal/csi"
)

// EventComponent is the source of a driver's events, the reference's.
func EventComponent(driver string) string { return "csi-snapshotter " + driver }

// Config is what the loop needs; every dependency is passed in.
type Config struct {
	// Client reads the Secrets of the calls (internal/controller/secrets).
	Client kubernetes.Interface
	// Snapshots writes VolumeSnapshotContents.
	Snapshots snapclient.Interface
	// Informers (PVs, with informerindex.VolumeOfPV) and SnapshotInformers
	// (contents and classes) must not be started yet.
	Informers         informers.SharedInformerFactory
	SnapshotInformers snapinformers.SharedInformerFactory
	// Pool holds the drivers; the loop serves those with
	// CREATE_DELETE_SNAPSHOT.
	Pool *csi.Pool
	// Recorder is the event recorder of a driver (source
	// EventComponent(driver)).
	Recorder func(driver string) record.EventRecorder
	// Settings: loop's defaults. RetryStart and RetryMax bound the
	// per-content backoff of failures and of waits (a snapshot not ready,
	// a deletion not released yet).
	loop.Settings
	// NodeName, if set, is a node deployment: only the contents of this
	// node are served (snapshotting.ServedBy), and Pool holds only this
	// node's endpoints.
	NodeName string
	// Metrics, if set, takes the runner's stuck-key metrics.
	Metrics prometheus.Registerer
	// Clock stamps status times; the wall clock when nil.
	Clock clock.PassiveClock
}

func (c Config) withDefaults() (Config, error) {
	if c.Client == nil || c.Snapshots == nil || c.Informers == nil || c.SnapshotInformers == nil || c.Pool == nil || c.Recorder == nil {
		return c, errors.New("snapshotter: Client, Snapshots, Informers, SnapshotInformers, Pool and Recorder are required")
	}
	c.Settings = c.Settings.WithDefaults()
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	return c, nil
}
