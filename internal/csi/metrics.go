package csi

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/volplane/volplane/internal/metriclabel"
)

// Metrics is the latency histogram of CSI calls, under the name the
// Kubernetes CSI sidecars use so that existing dashboards keep working.
type Metrics struct {
	seconds *prometheus.HistogramVec
}

// NewMetrics registers the histogram on reg, or reuses the one registered
// there already (the loops may be started twice on one registry, e.g. after
// regaining leadership).
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	h := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "csi_sidecar_operations_seconds",
		Help:    "Duration of CSI calls, by driver, method and gRPC status code.",
		Buckets: []float64{0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 25, 50, 120, 300, 600},
	}, []string{"driver_name", "method_name", "grpc_status_code"})
	if err := reg.Register(h); err != nil {
		var already prometheus.AlreadyRegisteredError
		if errors.As(err, &already) {
			if existing, ok := already.ExistingCollector.(*prometheus.HistogramVec); ok {
				return &Metrics{seconds: existing}, nil
			}
		}
		return nil, err
	}
	return &Metrics{seconds: h}, nil
}

// observe is a no-op on a nil Metrics.
func (m *Metrics) observe(driver, method string, err error, start time.Time) {
	if m == nil {
		return
	}
	// The driver names itself: its name is not ours to trust.
	m.seconds.WithLabelValues(metriclabel.Value(driver), "/csi.v1.Controller/"+method, code(err)).Observe(time.Since(start).Seconds())
}
