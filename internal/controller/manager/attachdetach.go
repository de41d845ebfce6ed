package manager

import (
	"context"
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
)

// newAttachDetach builds the attachdetach loop. PLACEHOLDER: the helper
// building internal/controller/attachdetach replaces this body.
func newAttachDetach(cfg Config, client kubernetes.Interface, factory informers.SharedInformerFactory,
	events record.EventBroadcaster, reg prometheus.Registerer, l *loops) (func(context.Context) error, error) {
	return nil, errors.New("attachdetach: not built yet")
}
