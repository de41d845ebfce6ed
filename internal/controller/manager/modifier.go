package manager

import (
	"context"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"

	"github.com/volplane/volplane/internal/controller/modifier"
	"github.com/volplane/volplane/internal/controller/resizing"
	"github.com/volplane/volplane/internal/csi"
)

// newModifier builds the modifier loop (the external-resizer's modify
// controller, which runs inside the resizer loop) over the drivers in
// pool, each with the resizer's event source.
func newModifier(cfg Config, client kubernetes.Interface, factory informers.SharedInformerFactory,
	pool *csi.Pool, events record.EventBroadcaster, l *loops) (func(context.Context) error, error) {
	m, err := modifier.New(modifier.Config{
		Client: client, Informers: factory, Pool: pool,
		Recorder: resizing.RecorderFrom(events),
		Workers:  cfg.Workers, ResyncPeriod: cfg.ResyncPeriod, NodeName: cfg.nodeName(),
	})
	if err != nil {
		return nil, err
	}
	l.started(m)
	return m.Run, nil
}
