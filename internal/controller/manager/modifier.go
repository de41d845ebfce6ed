package manager

import (
	"k8s.io/client-go/tools/record"

	"github.com/volplane/volplane/internal/controller/modifier"
	"github.com/volplane/volplane/internal/controller/resizing"
)

// newModifier builds the modifier loop (the external-resizer's modify
// controller, which runs inside the resizer row) over the drivers in the
// pool, each with the resizer's event source.
func newModifier(w wiring) (*modifier.Controller, error) {
	return modifier.New(modifier.Config{
		Client: w.Client, Informers: w.Informers, Pool: w.Pool,
		Recorder: func(driver string) record.EventRecorder {
			return w.Recorder(resizing.EventComponent(driver))
		},
		Workers: w.Config.Workers, ResyncPeriod: w.Config.ResyncPeriod, NodeName: w.Config.nodeName(),
		Metrics: w.Metrics,
	})
}
