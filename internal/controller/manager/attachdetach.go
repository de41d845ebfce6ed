package manager

import (
	"context"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"

	"github.com/volplane/volplane/internal/attachment"
	"github.com/volplane/volplane/internal/controller/attachdetach"
)

// newAttachDetach builds the attachdetach loop: kube-controller-manager's
// attach/detach controller, with its 6-minute unmount wait.
func newAttachDetach(cfg Config, client kubernetes.Interface, factory informers.SharedInformerFactory,
	events record.EventBroadcaster, reg prometheus.Registerer, l *loops) (func(context.Context) error, error) {
	c, err := attachdetach.New(attachdetach.Config{
		Client: client, Informers: factory, Recorder: recorder(events, attachment.EventComponent), Metrics: reg,
		Workers: cfg.Workers, ResyncPeriod: cfg.ResyncPeriod, MaxWaitForUnmount: cfg.MaxWaitForUnmount,
	})
	if err != nil {
		return nil, err
	}
	l.started(c)
	return c.Run, nil
}
