package protection

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/volplane/volplane/internal/controller/loop"
	"github.com/volplane/volplane/internal/protection"
)

// VolumeLoop is the pv-protection loop. Build it with NewVolumeLoop and
// start it with Run.
type VolumeLoop struct {
	client kubernetes.Interface
	pvs    corelisters.PersistentVolumeLister
	q      workqueue.TypedRateLimitingInterface[string]
	newest *loop.Newest[*v1.PersistentVolume]
	// unsettled: the volumes last seen with a finalizer to write, all a
	// resync looks at.
	unsettled *loop.Unsettled
	runner    *loop.Runner
}

// NewVolumeLoop builds the pv-protection loop over the given informers.
func NewVolumeLoop(cfg Config) (*VolumeLoop, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	l := &VolumeLoop{client: cfg.Client,
		q:      loop.NewQueue("pvprotection", retryBase, retryMax),
		newest: loop.NewNewest[*v1.PersistentVolume](), unsettled: loop.NewUnsettled()}
	pvInf := cfg.Informers.Core().V1().PersistentVolumes()
	l.pvs = pvInf.Lister()
	synced, err := loop.Register(loop.Handler{Informer: pvInf.Informer(), Funcs: cache.ResourceEventHandlerFuncs{
		AddFunc: l.onVolume, UpdateFunc: loop.Updated(l.onVolume), DeleteFunc: l.onVolumeDeleted}})
	if err != nil {
		return nil, fmt.Errorf("pv-protection: %w", err)
	}
	l.runner = &loop.Runner{Name: "PV protection", Synced: synced, Workers: cfg.Workers,
		Queues: []loop.Queue{{Q: l.q, Sync: l.sync}}, Resync: l.resync, ResyncPeriod: cfg.ResyncPeriod,
		Metrics: cfg.Metrics}
	return l, nil
}

// Run starts the workers once the cache is synced and blocks until ctx is
// done. The informer factory must be started by the caller after New.
func (l *VolumeLoop) Run(ctx context.Context) error { return l.runner.Run(ctx) }

// Ready reports whether the cache is synced and the workers run.
func (l *VolumeLoop) Ready() bool { return l.runner.Ready() }

// onVolume queues a volume with a finalizer to write; a Bound volume being
// deleted waits for the event of its next phase.
func (l *VolumeLoop) onVolume(obj any) {
	pv, ok := obj.(*v1.PersistentVolume)
	if !ok {
		return
	}
	pv = l.newest.Observe(pv.Name, pv)
	switch protection.DecideVolume(pv).Action {
	case protection.AddFinalizer, protection.RemoveFinalizer:
		l.unsettled.Saw(pv.Name, false)
		l.q.Add(pv.Name)
	default:
		l.unsettled.Saw(pv.Name, true)
	}
}

func (l *VolumeLoop) onVolumeDeleted(obj any) {
	if pv, ok := loop.As[*v1.PersistentVolume](obj); ok {
		l.newest.Forget(pv.Name)
		l.unsettled.Gone(pv.Name)
	}
}

// sync writes the volume's decided finalizer change. A failed write is
// retried by the runner; nothing here waits on time.
func (l *VolumeLoop) sync(ctx context.Context, name string) (loop.Result, error) {
	pv, err := l.pvs.Get(name)
	if apierrors.IsNotFound(err) {
		return loop.Done(), nil
	}
	if err != nil {
		return loop.Done(), fmt.Errorf("PV %s: %w", name, err)
	}
	pv = l.newest.Observe(name, pv)
	d := protection.DecideVolume(pv)
	switch d.Action {
	case protection.AddFinalizer, protection.RemoveFinalizer:
		return loop.Done(), l.writeVolume(ctx, pv, d)
	case protection.Keep:
		klog.FromContext(ctx).V(4).Info("Keeping PV because it is being used", "pv", klog.KObj(pv))
	}
	return loop.Done(), nil
}

// resync revisits the volumes last seen with a finalizer to write: a
// safety net, the loop is event driven.
func (l *VolumeLoop) resync(context.Context) {
	for _, name := range l.unsettled.Keys() {
		l.q.Add(name)
	}
}
