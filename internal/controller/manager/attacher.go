package manager

import "github.com/volplane/volplane/internal/controller/attacher"

// newAttacher builds the attacher loop (the external-attacher's role) over
// the drivers in the pool. It records no events (the external-attacher
// records none); its CSI calls are measured by the pool's metrics, its
// stuck keys on the registry. In node deployment it attaches only to its
// own node, through that node's driver.
func newAttacher(w wiring) ([]Runnable, error) {
	a, err := attacher.New(attacher.Config{
		Client: w.Client, Informers: w.Informers, Pool: w.Pool, Metrics: w.Metrics,
		Workers: w.Config.Workers, ResyncPeriod: w.Config.ResyncPeriod, NodeName: w.Config.nodeName(),
	})
	if err != nil {
		return nil, err
	}
	return []Runnable{a}, nil
}
