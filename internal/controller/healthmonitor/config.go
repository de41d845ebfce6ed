package healthmonitor

import (
	"errors"
	"time"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"

	"github.com/volplane/volplane/internal/csi"
)

// EventComponent is the source of the loop's events on a claim of driver,
// the external-health-monitor's (csi-pv-monitor-controller-<driver>).
func EventComponent(driver string) string { return "csi-pv-monitor-controller-" + driver }

// DefaultInterval is the reference's --monitor-interval (1 minute).
const DefaultInterval = time.Minute

// Config is what the loop needs; every dependency is passed in.
type Config struct {
	Client    kubernetes.Interface
	Informers informers.SharedInformerFactory
	// Recorder returns the recorder of a driver's events (its source
	// EventComponent(driver)).
	Recorder func(driver string) record.EventRecorder
	// Pool holds the drivers whose volumes are monitored.
	Pool *csi.Pool
	// Interval between two polls (default DefaultInterval).
	Interval time.Duration
	// NodeName, in node deployment (beside a node-local driver whose
	// controller service runs on each node), restricts the loop to the
	// volumes this node's driver holds (their node affinity met by the
	// node: provisioning.ForVolume), so that the nodes' monitors never
	// report on one claim twice. "" monitors every volume of the pool.
	NodeName string
	// WriteStatus says whether the CSIVolumeHealth gate is on: the claim's
	// status.healthStatus is written beside the events. Read at each poll.
	WriteStatus func() bool
}

func (c Config) withDefaults() (Config, error) {
	if c.Client == nil || c.Informers == nil || c.Recorder == nil || c.Pool == nil {
		return c, errors.New("healthmonitor: Client, Informers, Recorder and Pool are required")
	}
	if c.Interval <= 0 {
		c.Interval = DefaultInterval
	}
	if c.WriteStatus == nil {
		c.WriteStatus = func() bool { return false }
	}
	return c, nil
}
