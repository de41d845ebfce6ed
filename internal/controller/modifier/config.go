package modifier

import (
	"errors"
	"time"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"

	"github.com/volplane/volplane/internal/csi"
)

// Config is what the loop needs; every dependency is passed in.
type Config struct {
	// Client writes claims' status and PVs, and reads modify secrets.
	Client kubernetes.Interface
	// Informers must not be started yet; the loop registers claims, PVs and
	// VolumeAttributesClasses.
	Informers informers.SharedInformerFactory
	// Pool holds the drivers served: the loop handles exactly the claims
	// whose PV's spec.csi.driver is one of them, and modifies through the
	// endpoints with MODIFY_VOLUME (Info.Modify).
	Pool *csi.Pool
	// Recorder returns the event recorder of a driver; its source should be
	// modification.EventComponent(driver). Nil records no events.
	Recorder func(driver string) record.EventRecorder
	// Workers (the external-resizer's --workers: 10).
	Workers int
	// ResyncPeriod is how often claims not at rest are looked at again
	// (--resync-period: 10m); those backing off are left alone.
	ResyncPeriod time.Duration
	// RetryStart and RetryMax bound the per-claim backoff of failed syncs
	// (--retry-interval-start/-max: 1s, 5m).
	RetryStart, RetryMax time.Duration
	// SlowRetry is how long an infeasible target waits before it is asked
	// for again (the reference's slow set: RetryMax).
	SlowRetry time.Duration
	// Now is the clock (time.Now if nil).
	Now func() time.Time
}

// The external-resizer's defaults.
const (
	DefaultWorkers      = 10
	DefaultResyncPeriod = 10 * time.Minute
	DefaultRetryStart   = time.Second
	DefaultRetryMax     = 5 * time.Minute
)

func (c Config) withDefaults() (Config, error) {
	if c.Client == nil || c.Informers == nil || c.Pool == nil {
		return c, errors.New("modifier: Client, Informers and Pool are required")
	}
	if c.Workers <= 0 {
		c.Workers = DefaultWorkers
	}
	if c.ResyncPeriod <= 0 {
		c.ResyncPeriod = DefaultResyncPeriod
	}
	if c.RetryStart <= 0 {
		c.RetryStart = DefaultRetryStart
	}
	if c.RetryMax <= 0 {
		c.RetryMax = DefaultRetryMax
	}
	if c.SlowRetry <= 0 {
		c.SlowRetry = c.RetryMax
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c, nil
}
