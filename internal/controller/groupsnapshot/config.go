package groupsnapshot

import (
	"errors"
	"time"

	snapclient "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	snapinformers "github.com/kubernetes-csi/external-snapshotter/client/v8/informers/externalversions"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"

	"github.com/volplane/volplane/internal/controller/loop"
	"github.com/volplane/volplane/internal/csi"
)

// Event sources, the reference processes'.
const (
	ControllerComponent = "snapshot-controller"
	SidecarComponent    = "csi-snapshotter"
)

// Config is what either half needs; every dependency is passed in.
type Config struct {
	// Client reads claims, PVs and Secrets (through informers and live
	// Secret reads).
	Client kubernetes.Interface
	// Snapshots writes the snapshot API.
	Snapshots snapclient.Interface
	// Informers and SnapshotInformers must not be started yet.
	Informers         informers.SharedInformerFactory
	SnapshotInformers snapinformers.SharedInformerFactory
	Recorder          record.EventRecorder
	// Pool is the CSI drivers the Sidecar serves (unused by Controller).
	Pool *csi.Pool
	// NodeName, set in node deployment, makes the Sidecar take only the
	// group contents its node's endpoint holds.
	NodeName string
	// Settings: loop's defaults.
	loop.Settings
	Metrics prometheus.Registerer
	// Now is the clock (time.Now by default).
	Now func() time.Time
}

func (c Config) withDefaults(sidecar bool) (Config, error) {
	if c.Client == nil || c.Snapshots == nil || c.Informers == nil || c.SnapshotInformers == nil || c.Recorder == nil {
		return c, errors.New("groupsnapshot: Client, Snapshots, Informers, SnapshotInformers and Recorder are required")
	}
	if sidecar && c.Pool == nil {
		return c, errors.New("groupsnapshot: the sidecar needs a Pool")
	}
	c.Settings = c.Settings.WithDefaults()
	if c.Now == nil {
		c.Now = time.Now
	}
	return c, nil
}
