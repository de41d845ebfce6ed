package manager

import (
	"context"
	"slices"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"

	"github.com/volplane/volplane/internal/csi"
)

// newAttachLoops builds the selected attach loops: attachdetach
// (kube-controller-manager's attach/detach controller) and attacher (the
// external-attacher, for the drivers in pool).
func newAttachLoops(cfg Config, client kubernetes.Interface, factory informers.SharedInformerFactory,
	events record.EventBroadcaster, reg prometheus.Registerer, l *loops, pool *csi.Pool) ([]func(context.Context) error, error) {
	var runs []func(context.Context) error
	if slices.Contains(cfg.Controllers, AttachDetach) {
		run, err := newAttachDetach(cfg, client, factory, events, reg, l)
		if err != nil {
			return nil, err
		}
		runs = append(runs, run)
	}
	if slices.Contains(cfg.Controllers, Attacher) {
		run, err := newAttacher(cfg, client, factory, events, reg, l, pool)
		if err != nil {
			return nil, err
		}
		runs = append(runs, run)
	}
	return runs, nil
}
