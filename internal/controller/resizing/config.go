package resizing

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/volplane/volplane/internal/csi"
	"github.com/volplane/volplane/internal/provisioning"
)

// Config is what either loop needs; every dependency is passed in.
type Config struct {
	// Client writes claims' status and PVs, and reads the expand or modify
	// secrets.
	Client kubernetes.Interface
	// Informers must not be started yet; each loop registers what it
	// watches (claims and PVs; the modifier also VolumeAttributesClasses).
	Informers informers.SharedInformerFactory
	// Pool holds the drivers served: a loop handles exactly the claims
	// whose PV's spec.csi.driver is one of them.
	Pool *csi.Pool
	// Recorder returns the event recorder of a driver; its source should be
	// "external-resizer <driver>" (EventComponent, as RecorderFrom). Nil records
	// no events.
	Recorder func(driver string) record.EventRecorder
	// Workers (the external-resizer's --workers: 10).
	Workers int
	// ResyncPeriod is how often claims not at rest are looked at again
	// (--resync-period: 10m); those backing off are left alone.
	ResyncPeriod time.Duration
	// RetryStart and RetryMax bound the per-claim backoff of failed syncs
	// (--retry-interval-start/-max: 1s, 5m).
	RetryStart, RetryMax time.Duration
	// SlowRetry is how long an infeasible request (a size, a class) waits
	// before it is asked for again (the reference's slow set: RetryMax).
	SlowRetry time.Duration
	// Clock reads the time of marks and slow retries (the wall clock if
	// nil).
	Clock clock.PassiveClock
	// Metrics, if set, takes the loop runner's stuck-key metrics.
	Metrics prometheus.Registerer
	// NodeName, if set, is node deployment: the loop runs beside that
	// node's driver (Pool holds its endpoint) and serves only the PVs that
	// driver holds (Holds), since another node's driver cannot expand or
	// modify a volume it never made.
	NodeName string
}

// The external-resizer's defaults.
const (
	DefaultWorkers      = 10
	DefaultResyncPeriod = 10 * time.Minute
	DefaultRetryStart   = time.Second
	DefaultRetryMax     = 5 * time.Minute
)

// WithDefaults checks the dependencies and fills in what is left zero;
// loop names the loop in the error.
func (c Config) WithDefaults(loop string) (Config, error) {
	if c.Client == nil || c.Informers == nil || c.Pool == nil {
		return c, fmt.Errorf("%s: Client, Informers and Pool are required", loop)
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
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	return c, nil
}

// Holds says whether the loop serves pv's volume: every volume of a
// driver in Pool, and in node deployment only one whose node affinity the
// node's driver's segment meets (provisioning.ForVolume).
func (c Config) Holds(pv *v1.PersistentVolume) bool {
	if pv.Spec.CSI == nil {
		return false
	}
	info, served := c.Pool.Info(pv.Spec.CSI.Driver)
	if !served || c.NodeName == "" {
		return served
	}
	return provisioning.ForVolume(provisioning.Local{Node: c.NodeName, Topology: info.Topology}, pv).Ours
}

// recorders are the event recorders of the pool's drivers, by driver name;
// empty without a Recorder.
func (c Config) recorders() Recorders {
	out := Recorders{}
	if c.Recorder == nil {
		return out
	}
	for _, d := range c.Pool.Drivers() {
		out[d] = c.Recorder(d)
	}
	return out
}

// EventComponent is the source of either loop's events for a driver, named
// as the external-resizer names it.
func EventComponent(driver string) string { return "external-resizer " + driver }

// RecorderFrom is a Config.Recorder over b: each driver's events come from
// EventComponent(driver).
func RecorderFrom(b record.EventBroadcaster) func(driver string) record.EventRecorder {
	return func(driver string) record.EventRecorder {
		return b.NewRecorder(scheme.Scheme, v1.EventSource{Component: EventComponent(driver)})
	}
}

// Recorders holds an event recorder per driver: the reference's events
// come from "external-resizer <driver>".
type Recorders map[string]record.EventRecorder

// Event records on the claim through the driver's recorder (none: no
// event).
func (r Recorders) Event(driver string, claim *v1.PersistentVolumeClaim, eventType, reason, msg string) {
	if rec := r[driver]; rec != nil {
		rec.Event(claim, eventType, reason, msg)
	}
}
