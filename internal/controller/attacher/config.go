package attacher

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

	"github.com/volplane/volplane/internal/controller/loop"
	"github.com/volplane/volplane/internal/csi"
)

// Config is what the loop needs; every dependency is passed in.
type Config struct {
	// Client writes VolumeAttachments and PVs and reads publish secrets.
	Client kubernetes.Interface
	// Informers must not be started yet; the loop registers
	// VolumeAttachments, PVs and CSINodes.
	Informers informers.SharedInformerFactory
	// Pool holds the drivers served: the loop handles exactly the
	// VolumeAttachments whose spec.attacher is one of them.
	Pool *csi.Pool
	// Workers per queue (default loop.DefaultWorkers).
	Workers int
	// ResyncPeriod is how often attachments not at rest are looked at again
	// (default loop.DefaultResyncPeriod); those backing off are left to
	// their backoff.
	ResyncPeriod time.Duration
	// RetryStart and RetryMax bound the per-object backoff of failed syncs
	// (the external-attacher's --retry-interval-start/-max: 1s, 5m).
	RetryStart, RetryMax time.Duration
	// Timeout bounds one ControllerPublish/Unpublish call (the
	// external-attacher's --timeout: 15s).
	Timeout time.Duration
	// Metrics, if set, takes the loop's stuck-key metrics (loop.Runner).
	Metrics prometheus.Registerer
	// Clock stamps the errors saved in attachments and times failing keys
	// (default the real clock).
	Clock clock.PassiveClock
	// NodeName, if set, is node deployment: the loop runs beside that
	// node's driver (Pool holds its endpoint) and handles only the
	// VolumeAttachments whose spec.nodeName is this node, and only the PVs
	// that driver holds (their node affinity admits the node, as for the
	// resizer), since another node's driver cannot attach there.
	NodeName string
}

// The external-attacher's defaults.
const (
	DefaultRetryStart = time.Second
	DefaultRetryMax   = 5 * time.Minute
	DefaultTimeout    = 15 * time.Second
)

func (c Config) withDefaults() (Config, error) {
	if c.Client == nil || c.Informers == nil || c.Pool == nil {
		return c, errors.New("attacher: Client, Informers and Pool are required")
	}
	c.Workers, c.ResyncPeriod = loop.WithDefaults(c.Workers, c.ResyncPeriod)
	if c.RetryStart <= 0 {
		c.RetryStart = DefaultRetryStart
	}
	if c.RetryMax <= 0 {
		c.RetryMax = DefaultRetryMax
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	return c, nil
}
