package manager

import (
	"context"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"

	"github.com/volplane/volplane/internal/controller/resizer"
	"github.com/volplane/volplane/internal/controller/resizing"
	"github.com/volplane/volplane/internal/csi"
)

// newResizer builds the resizer loop (the external-resizer's role) over
// the drivers in pool, each with its own event source.
func newResizer(cfg Config, client kubernetes.Interface, factory informers.SharedInformerFactory,
	events record.EventBroadcaster, l *loops, pool *csi.Pool) (func(context.Context) error, error) {
	r, err := resizer.New(resizer.Config{
		Client: client, Informers: factory, Pool: pool,
		Recorder: resizing.RecorderFrom(events),
		Workers:  cfg.Workers, ResyncPeriod: cfg.ResyncPeriod, NodeName: cfg.nodeName(),
	})
	if err != nil {
		return nil, err
	}
	l.started(r)
	return r.Run, nil
}
