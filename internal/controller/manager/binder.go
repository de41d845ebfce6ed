package manager

import "github.com/volplane/volplane/internal/controller/binder"

// newBinder builds the binder: kube-controller-manager's
// persistentvolume-binder.
func newBinder(w wiring) ([]Runnable, error) {
	b, err := binder.New(binder.Config{
		Client: w.Client, Informers: w.Informers, Recorder: w.Recorder(binder.EventComponent), Metrics: w.Metrics,
		Workers: w.Config.Workers, ResyncPeriod: w.Config.ResyncPeriod, RecycleTimeout: w.Config.RecycleTimeout,
	})
	if err != nil {
		return nil, err
	}
	return []Runnable{b}, nil
}
