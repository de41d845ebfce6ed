package manager

import (
	"context"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"

	"github.com/volplane/volplane/internal/controller/expander"
)

// newExpander builds the expander loop (kube-controller-manager's
// persistentvolume-expander). It calls no driver. Its workers are the
// reference's fixed 10, not --workers: a sync is a cache read and at most
// one small write, and the reference offers no setting either.
func newExpander(client kubernetes.Interface, factory informers.SharedInformerFactory,
	events record.EventBroadcaster, l *loops) (func(context.Context) error, error) {
	e, err := expander.New(expander.Config{
		Client: client, Informers: factory, Recorder: recorder(events, expander.EventComponent),
	})
	if err != nil {
		return nil, err
	}
	l.started(e)
	return e.Run, nil
}
