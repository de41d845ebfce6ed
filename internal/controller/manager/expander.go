package manager

import "github.com/volplane/volplane/internal/controller/expander"

// newExpander builds the expander loop (kube-controller-manager's
// persistentvolume-expander). It calls no driver. Its workers are the
// reference's fixed 10, not --workers: a sync is a cache read and at most
// one small write, and the reference offers no setting either.
func newExpander(w wiring) ([]Runnable, error) {
	e, err := expander.New(expander.Config{
		Client: w.Client, Informers: w.Informers, Recorder: w.Recorder(expander.EventComponent), Metrics: w.Metrics,
	})
	if err != nil {
		return nil, err
	}
	return []Runnable{e}, nil
}
