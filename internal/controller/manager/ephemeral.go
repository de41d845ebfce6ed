package manager

import "github.com/volplane/volplane/internal/controller/ephemeral"

// EphemeralVolume is kube-controller-manager's ephemeral-volume controller
// (its alias ephemeral-volume): the claims of generic ephemeral volumes.
const EphemeralVolume = "ephemeral-volume"

// newEphemeralVolume builds the ephemeral-volume loop. It calls no driver.
func newEphemeralVolume(w wiring) ([]Runnable, error) {
	c, err := ephemeral.New(ephemeral.Config{Client: w.Client, Informers: w.Informers,
		Recorder: w.Recorder(ephemeral.EventComponent), Workers: w.Config.Workers,
		ResyncPeriod: w.Config.ResyncPeriod, Metrics: w.Metrics})
	if err != nil {
		return nil, err
	}
	return []Runnable{c}, nil
}
