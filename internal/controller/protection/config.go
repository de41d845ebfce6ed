package protection

import (
	"errors"
	"time"

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
	// Workers is the number of workers of each loop (default 4); the claim
	// loop also sends up to this many writes of one batch at once.
	Workers int
	// ResyncPeriod is how often objects not at rest are revisited (default
	// 15s): a safety net, the loops are event driven.
	ResyncPeriod time.Duration
}

func (c Config) withDefaults() (Config, error) {
	if c.Client == nil || c.Informers == nil {
		return c, errors.New("protection: Client and Informers are required")
	}
	c.Workers, c.ResyncPeriod = loop.WithDefaults(c.Workers, c.ResyncPeriod)
	return c, nil
}

// Retries of failed writes back off per key from retryBase to retryMax.
// These loops call only the API server, so the first retry comes quickly.
const (
	retryBase = 50 * time.Millisecond
	retryMax  = 5 * time.Minute
)
