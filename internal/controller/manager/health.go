package manager

import (
	"k8s.io/client-go/tools/record"

	"github.com/volplane/volplane/internal/controller/healthmonitor"
	"github.com/volplane/volplane/internal/features"
)

// HealthMonitor is the health-monitor loop, the external-health-monitor
// controller's role: it polls the CSI controllers' volume health.
const HealthMonitor = "health-monitor"

// newHealthMonitor builds the health-monitor loop over the drivers in the
// pool. The claim's status.healthStatus is written when the
// CSIVolumeHealth gate is on (Config.Gates).
func newHealthMonitor(w wiring) ([]Runnable, error) {
	gate := w.Config.Gates().Enabled(features.CSIVolumeHealth)
	m, err := healthmonitor.New(healthmonitor.Config{
		Client: w.Client, Informers: w.Informers, Pool: w.Pool,
		Recorder: func(driver string) record.EventRecorder {
			return w.Recorder(healthmonitor.EventComponent(driver))
		},
		Interval: w.Config.HealthMonitorInterval, NodeName: w.Config.nodeName(), WriteStatus: func() bool { return gate },
	})
	if err != nil {
		return nil, err
	}
	return []Runnable{m}, nil
}
