package manager

import (
	"context"
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"

	"github.com/volplane/volplane/internal/csi"
)

// newAttacher builds the attacher loop over the drivers in pool.
// PLACEHOLDER: the helper building internal/controller/attacher replaces
// this body.
func newAttacher(cfg Config, client kubernetes.Interface, factory informers.SharedInformerFactory,
	events record.EventBroadcaster, reg prometheus.Registerer, l *loops, pool *csi.Pool) (func(context.Context) error, error) {
	return nil, errors.New("attacher: not built yet")
}
