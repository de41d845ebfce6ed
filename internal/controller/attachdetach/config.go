package attachdetach

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/volplane/volplane/internal/attachment"
	"github.com/volplane/volplane/internal/controller/loop"
)

// Config is what the loop needs; every dependency is passed in.
type Config struct {
	// Client creates and deletes VolumeAttachments and patches node status.
	Client kubernetes.Interface
	// Informers must not be started yet; New registers what it needs.
	Informers informers.SharedInformerFactory
	// Recorder records the pods' events, source attachment.EventComponent.
	Recorder record.EventRecorder
	// Metrics receives the loop's series; nil means a private registry.
	Metrics prometheus.Registerer
	// Workers is the number of node workers (default loop.DefaultWorkers).
	Workers int
	// ResyncPeriod is how often every node is looked at again (default
	// 15s): the reference's desired-state populator, a safety net.
	ResyncPeriod time.Duration
	// MaxWaitForUnmount is how long an unwanted volume the node still uses
	// stays attached before a NotReady node loses it anyway (default
	// attachment.DefaultMaxWaitForUnmount, 6 minutes).
	MaxWaitForUnmount time.Duration
	// StatusInterval is the least time between two patches of a node's
	// volumesAttached that only add volumes, while the node is quiet; up
	// to four times as long while it is busy (default
	// attachment.DefaultStatusInterval; negative: none).
	StatusInterval time.Duration
	// Clock tells the time of the unmount wait and of the status interval
	// (default the real clock).
	Clock clock.PassiveClock
}

// withDefaults fills in what is zero, in one place.
func (c Config) withDefaults() (Config, error) {
	if c.Client == nil || c.Informers == nil || c.Recorder == nil {
		return c, errors.New("attachdetach: Client, Informers and Recorder are required")
	}
	c.Workers, c.ResyncPeriod = loop.WithDefaults(c.Workers, c.ResyncPeriod)
	if c.MaxWaitForUnmount <= 0 {
		c.MaxWaitForUnmount = attachment.DefaultMaxWaitForUnmount
	}
	if c.StatusInterval == 0 {
		c.StatusInterval = attachment.DefaultStatusInterval
	}
	if c.Metrics == nil {
		c.Metrics = prometheus.NewRegistry()
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	return c, nil
}

// Retries of a failed node sync back off from retryBase to retryMax, as
// the reference's operation backoff (500ms doubling up to about 2m).
const (
	retryBase = 500 * time.Millisecond
	retryMax  = 2*time.Minute + 2*time.Second
)
