package manager

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"

	"github.com/volplane/volplane/internal/controller/attacher"
	"github.com/volplane/volplane/internal/csi"
)

// newAttacher builds the attacher loop over the drivers in pool. It
// records no events (the external-attacher records none) and its CSI calls
// are measured by the pool's metrics, so events and reg are unused.
func newAttacher(cfg Config, client kubernetes.Interface, factory informers.SharedInformerFactory,
	_ record.EventBroadcaster, _ prometheus.Registerer, l *loops, pool *csi.Pool) (func(context.Context) error, error) {
	a, err := attacher.New(attacher.Config{
		Client: client, Informers: factory, Pool: pool,
		Workers: cfg.Workers, ResyncPeriod: cfg.ResyncPeriod,
	})
	if err != nil {
		return nil, err
	}
	l.started(a)
	return a.Run, nil
}
