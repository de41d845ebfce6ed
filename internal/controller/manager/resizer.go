package manager

import (
	"k8s.io/client-go/tools/record"

	"github.com/volplane/volplane/internal/controller/resizer"
	"github.com/volplane/volplane/internal/controller/resizing"
)

// newResizer builds the external-resizer's two controllers over the
// drivers in the pool: expansion (the resizer loop, each driver with its
// own event source) and VolumeAttributesClass modification (newModifier).
func newResizer(w wiring) ([]Runnable, error) {
	r, err := resizer.New(resizer.Config{
		Client: w.Client, Informers: w.Informers, Pool: w.Pool,
		Recorder: func(driver string) record.EventRecorder {
			return w.Recorder(resizing.EventComponent(driver))
		},
		Workers: w.Config.Workers, ResyncPeriod: w.Config.ResyncPeriod, NodeName: w.Config.nodeName(),
		Metrics: w.Metrics,
	})
	if err != nil {
		return nil, err
	}
	m, err := newModifier(w)
	if err != nil {
		return nil, err
	}
	return []Runnable{r, m}, nil
}
