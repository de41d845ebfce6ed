package protection

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	"github.com/volplane/volplane/internal/controller/loop"
)

// Config is what each loop needs; every dependency is passed in.
type Config struct {
	// Client writes the finalizers and lists pods live.
	Client kubernetes.Interface
	// Informers must not be started yet; the loops register what they need
	// (claims and pods, or volumes).
	Informers informers.SharedInformerFactory
	// Workers is the number of workers of each loop (default loop.DefaultWorkers); the claim
	// loop also sends up to WritersPerWorker times this many writes of one
	// batch at once.
	Workers int
	// ResyncPeriod is how often objects not at rest are revisited (default
	// 15s): a safety net, the loops are event driven.
	ResyncPeriod time.Duration
	// Metrics, if set, takes the loops' stuck-key metrics (loop.Runner).
	Metrics prometheus.Registerer
	// TrackUnused makes the claim loop keep the claim condition Unused
	// (gate PersistentVolumeClaimUnusedSinceTime).
	TrackUnused bool
}

func (c Config) withDefaults() (Config, error) {
	if c.Client == nil || c.Informers == nil {
		return c, errors.New("protection: Client and Informers are required")
	}
	c.Workers, c.ResyncPeriod = loop.WithDefaults(c.Workers, c.ResyncPeriod)
	return c, nil
}

// WritersPerWorker is how many writes of one batch the claim loop sends at
// once per worker. A namespace's batch is one worker's, so the other
// workers cannot help with it; a bulk delete in one namespace would then
// run at a few writes in flight. Measured (bench/, 1,000 unused claims,
// unthrottled): 4 writes in flight reach about two thirds of what the API
// server takes from a trivial writer, 16 reach all of it.
const WritersPerWorker = 4

// Retries of failed writes back off per key from retryBase to retryMax.
// These loops call only the API server, so the first retry comes quickly.
const (
	retryBase = 50 * time.Millisecond
	retryMax  = 5 * time.Minute
)
