package expander

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
)

// EventComponent is the source of the loop's events, the reference's.
const EventComponent = "volume_expand"

// Config is what the loop needs; every dependency is passed in.
type Config struct {
	// Client writes the resizer annotation.
	Client kubernetes.Interface
	// Informers must not be started yet; the loop registers claims and PVs.
	Informers informers.SharedInformerFactory
	// Recorder records the hand-off events; its source should be
	// EventComponent.
	Recorder record.EventRecorder
	// Workers is the number of workers (default DefaultWorkers).
	Workers int
	// RetryStart and RetryMax bound the per-claim backoff of failed syncs
	// (default the reference's 5ms and 1000s).
	RetryStart, RetryMax time.Duration
	// Metrics, if set, takes the loop runner's stuck-key metrics.
	Metrics prometheus.Registerer
}

// The reference's settings (expand_controller.go: defaultWorkerCount, and
// workqueue.DefaultTypedControllerRateLimiter's per-item backoff).
const (
	DefaultWorkers    = 10
	DefaultRetryStart = 5 * time.Millisecond
	DefaultRetryMax   = 1000 * time.Second
)

func (c Config) withDefaults() (Config, error) {
	if c.Client == nil || c.Informers == nil || c.Recorder == nil {
		return c, errors.New("expander: Client, Informers and Recorder are required")
	}
	if c.Workers <= 0 {
		c.Workers = DefaultWorkers
	}
	if c.RetryStart <= 0 {
		c.RetryStart = DefaultRetryStart
	}
	if c.RetryMax <= 0 {
		c.RetryMax = DefaultRetryMax
	}
	return c, nil
}
