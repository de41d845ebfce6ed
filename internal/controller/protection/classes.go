package protection

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/volplane/volplane/internal/controller/loop"
	"github.com/volplane/volplane/internal/informerindex"
	"github.com/volplane/volplane/internal/protection"
)

// ClassLoop is the vac-protection loop. Build it with NewClassLoop and start
// it with Run.
type ClassLoop struct {
	client  kubernetes.Interface
	classes storagelisters.VolumeAttributesClassLister
	pvs     cache.Indexer
	claims  cache.Indexer
	q       workqueue.TypedRateLimitingInterface[string]
	runner  *loop.Runner
}

// NewClassLoop builds the vac-protection loop over the given informers.
func NewClassLoop(cfg Config) (*ClassLoop, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	l := &ClassLoop{client: cfg.Client, q: loop.NewQueue("vacprotection", retryBase, retryMax)}
	classInf := cfg.Informers.Storage().V1().VolumeAttributesClasses()
	pvInf, claimInf, err := informerindex.ClassUsers(cfg.Informers)
	if err != nil {
		return nil, fmt.Errorf("vac-protection: %w", err)
	}
	l.classes, l.pvs, l.claims = classInf.Lister(), pvInf.GetIndexer(), claimInf.GetIndexer()
	synced, err := loop.Register(
		loop.Handler{Informer: classInf.Informer(), Funcs: cache.ResourceEventHandlerFuncs{
			AddFunc: l.onClass, UpdateFunc: loop.Updated(l.onClass)}},
		loop.Handler{Informer: pvInf, Funcs: cache.ResourceEventHandlerFuncs{
			UpdateFunc: func(old, cur any) { l.onDropped(volumeClasses(old), volumeClasses(cur)) },
			DeleteFunc: func(obj any) { l.onDropped(volumeClasses(obj), nil) }}},
		loop.Handler{Informer: claimInf, Funcs: cache.ResourceEventHandlerFuncs{
			UpdateFunc: func(old, cur any) { l.onDropped(claimClasses(old), claimClasses(cur)) },
			DeleteFunc: func(obj any) { l.onDropped(claimClasses(obj), nil) }}},
	)
	if err != nil {
		return nil, fmt.Errorf("vac-protection: %w", err)
	}
	l.runner = &loop.Runner{Name: "VAC protection", Synced: synced, Workers: cfg.Workers,
		Queues: []loop.Queue{{Q: l.q, Sync: l.sync}}, Resync: l.resync, ResyncPeriod: cfg.ResyncPeriod,
		Metrics: cfg.Metrics}
	return l, nil
}

// Run starts the workers once the caches are synced and blocks until ctx is
// done. The informer factory must be started by the caller after New.
func (l *ClassLoop) Run(ctx context.Context) error { return l.runner.Run(ctx) }

// Ready reports whether the caches are synced and the workers run.
func (l *ClassLoop) Ready() bool { return l.runner.Ready() }

// onClass queues a class that lacks the finalizer or is being deleted with
// it (the reference's vacAddedUpdated).
func (l *ClassLoop) onClass(obj any) {
	c, ok := obj.(*storagev1.VolumeAttributesClass)
	if !ok {
		return
	}
	switch protection.DecideClass(protection.ClassFacts{Class: c}).Action {
	case protection.None:
	default:
		l.q.Add(c.Name)
	}
}

// onDropped queues the classes a PV or claim stopped using (updated or
// deleted): one of them may be waiting to go.
func (l *ClassLoop) onDropped(old, cur []string) {
	for _, n := range protection.Dropped(old, cur) {
		l.q.Add(n)
	}
}

func volumeClasses(obj any) []string {
	if pv, ok := loop.As[*v1.PersistentVolume](obj); ok {
		return protection.VolumeClasses(pv)
	}
	return nil
}

func claimClasses(obj any) []string {
	if c, ok := loop.As[*v1.PersistentVolumeClaim](obj); ok {
		return protection.ClaimClasses(c)
	}
	return nil
}

// sync decides the class from the caches, confirms an unused one against
// live lists, and writes the finalizer change.
func (l *ClassLoop) sync(ctx context.Context, name string) (loop.Result, error) {
	c, err := l.classes.Get(name)
	if apierrors.IsNotFound(err) {
		return loop.Done(), nil
	}
	if err != nil {
		return loop.Done(), fmt.Errorf("VolumeAttributesClass %s: %w", name, err)
	}
	facts := protection.ClassFacts{Class: c}
	facts.CachedPVs, _ = informerindex.PVsOfClass(l.pvs, name)
	facts.CachedClaims, _ = informerindex.ClaimsOfClass(l.claims, name)
	d := protection.DecideClass(facts)
	if d.Action == protection.ListUsers {
		if err := l.listLive(ctx, &facts); err != nil {
			return loop.Done(), err
		}
		d = protection.DecideClass(facts)
	}
	switch d.Action {
	case protection.AddFinalizer, protection.RemoveFinalizer:
		return loop.Done(), l.write(ctx, c, d)
	case protection.Keep:
		klog.FromContext(ctx).V(4).Info("Keeping VAC because it is being used", "VAC", klog.KObj(c), "reason", d.Reason, "user", d.User)
	}
	return loop.Done(), nil
}

// listLive lists every PV and claim from the API server: an object created
// a moment ago may not be in the caches yet.
func (l *ClassLoop) listLive(ctx context.Context, f *protection.ClassFacts) error {
	pvs, err := l.client.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("live list of PVs failed: %w", err)
	}
	claims, err := l.client.CoreV1().PersistentVolumeClaims("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("live list of claims failed: %w", err)
	}
	for i := range pvs.Items {
		f.LivePVs = append(f.LivePVs, &pvs.Items[i])
	}
	for i := range claims.Items {
		f.LiveClaims = append(f.LiveClaims, &claims.Items[i])
	}
	f.Listed = true
	return nil
}

// write makes the decided finalizer change with a full Update of the copy
// the decision was made on, as the reference does: the resourceVersion
// makes the API server refuse it if the class changed since.
func (l *ClassLoop) write(ctx context.Context, c *storagev1.VolumeAttributesClass, d protection.Decision) error {
	if _, gone, err := updateFinalizer(ctx, c, protection.ClassFinalizer, d, "VolumeAttributesClass",
		l.client.StorageV1().VolumeAttributesClasses().Update); err != nil || gone {
		return err
	}
	klog.FromContext(ctx).V(3).Info("Protection finalizer of VAC changed", "VAC", klog.KObj(c), "action", d.Action.String(), "reason", d.Reason)
	return nil
}

// resync revisits the classes not at rest: a safety net.
func (l *ClassLoop) resync(context.Context) {
	classes, _ := l.classes.List(labels.Everything())
	for _, c := range classes {
		l.onClass(c)
	}
}
