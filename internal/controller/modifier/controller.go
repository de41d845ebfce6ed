package modifier

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/volplane/volplane/internal/controller/loop"
	"github.com/volplane/volplane/internal/csi"
	"github.com/volplane/volplane/internal/modification"
)

// Controller is the modifier loop. Build it with New, start it with Run.
type Controller struct {
	client    kubernetes.Interface
	pool      *csi.Pool
	recorders map[string]record.EventRecorder
	slowRetry time.Duration
	now       func() time.Time

	claims  corelisters.PersistentVolumeClaimLister
	pvs     corelisters.PersistentVolumeLister
	classes storagelisters.VolumeAttributesClassLister
	queue   workqueue.TypedRateLimitingInterface[string]
	// newestClaim and newestPV hold what our own writes returned until the
	// informer catches up, so a sync never decides on an older copy.
	newestClaim *loop.Newest[*v1.PersistentVolumeClaim]
	newestPV    *loop.Newest[*v1.PersistentVolume]
	memory      *memory
	// holds: Config.Holds.
	holds  func(*v1.PersistentVolume) bool
	runner *loop.Runner
}

// New builds the loop over the given informers.
func New(cfg Config) (*Controller, error) {
	cfg, err := cfg.WithDefaults("modifier")
	if err != nil {
		return nil, err
	}
	c := &Controller{client: cfg.Client, pool: cfg.Pool, slowRetry: cfg.SlowRetry, now: cfg.Now,
		recorders:   cfg.Recorders(),
		queue:       loop.NewQueue("modifier-claims", cfg.RetryStart, cfg.RetryMax),
		newestClaim: loop.NewNewest[*v1.PersistentVolumeClaim](),
		newestPV:    loop.NewNewest[*v1.PersistentVolume](),
		memory:      newMemory(), holds: cfg.Holds}
	claimInf := cfg.Informers.Core().V1().PersistentVolumeClaims()
	pvInf := cfg.Informers.Core().V1().PersistentVolumes()
	classInf := cfg.Informers.Storage().V1().VolumeAttributesClasses()
	c.claims, c.pvs, c.classes = claimInf.Lister(), pvInf.Lister(), classInf.Lister()
	synced, err := loop.Register(
		loop.Handler{Informer: claimInf.Informer(), Funcs: cache.ResourceEventHandlerFuncs{
			AddFunc: c.onClaim, UpdateFunc: loop.Updated(c.onClaim), DeleteFunc: c.onClaimDeleted}},
		loop.Handler{Informer: pvInf.Informer(), Funcs: cache.ResourceEventHandlerFuncs{
			AddFunc: c.onVolume, UpdateFunc: loop.Updated(c.onVolume), DeleteFunc: c.onVolumeDeleted}},
		loop.Handler{Informer: classInf.Informer(), Funcs: cache.ResourceEventHandlerFuncs{AddFunc: c.onClass}})
	if err != nil {
		return nil, fmt.Errorf("modifier: %w", err)
	}
	c.runner = &loop.Runner{Name: "Modifier", Synced: synced, Workers: cfg.Workers,
		Queues: []loop.Queue{{Q: c.queue, Sync: loop.ErrorOnly(c.syncClaim)}}, Resync: c.resync, ResyncPeriod: cfg.ResyncPeriod}
	return c, nil
}

// Run starts the workers once the caches are synced and blocks until ctx
// is done. The informer factory must be started by the caller after New.
func (c *Controller) Run(ctx context.Context) error {
	return c.runner.Run(ctx, "drivers", c.pool.Drivers())
}

// Ready reports whether the caches are synced and the workers run.
func (c *Controller) Ready() bool { return c.runner.Ready() }

func claimKey(ns, name string) string { return ns + "/" + name }

// restless says whether a claim may need a sync: Bound, and a class to
// reach or a modification's trace to clear.
func restless(claim *v1.PersistentVolumeClaim) bool {
	if claim.Status.Phase != v1.ClaimBound {
		return false
	}
	return !modification.AtRest(claim) || hasModifying(claim)
}

func hasModifying(claim *v1.PersistentVolumeClaim) bool {
	for _, cond := range claim.Status.Conditions {
		if cond.Type == v1.PersistentVolumeClaimVolumeModifyingVolume {
			return true
		}
	}
	return false
}

// onClaim queues a restless claim, unless the event is our own write:
// the sync that wrote it already decided what follows (and a failure's
// mark must not undo the backoff).
func (c *Controller) onClaim(obj any) {
	claim, ok := obj.(*v1.PersistentVolumeClaim)
	if !ok {
		return
	}
	key := claimKey(claim.Namespace, claim.Name)
	if c.newestClaim.IsOwnWrite(key, claim) {
		c.newestClaim.Observe(key, claim)
		return
	}
	claim = c.newestClaim.Observe(key, claim)
	if restless(claim) {
		c.queue.Add(key)
	}
}

func (c *Controller) onClaimDeleted(obj any) {
	if claim, ok := loop.As[*v1.PersistentVolumeClaim](obj); ok {
		key := claimKey(claim.Namespace, claim.Name)
		c.newestClaim.Forget(key)
		c.memory.forget(key)
	}
}

// onVolume queues the claim of a served PV: its PV may be what a sync
// waited for.
func (c *Controller) onVolume(obj any) {
	pv, ok := obj.(*v1.PersistentVolume)
	if !ok {
		return
	}
	pv = c.newestPV.Observe(pv.Name, pv)
	if ref := pv.Spec.ClaimRef; ref != nil && pv.Spec.CSI != nil && c.pool.Serves(pv.Spec.CSI.Driver) {
		if claim, err := c.claims.PersistentVolumeClaims(ref.Namespace).Get(ref.Name); err == nil && restless(claim) {
			c.queue.Add(claimKey(ref.Namespace, ref.Name))
		}
	}
}

func (c *Controller) onVolumeDeleted(obj any) {
	if pv, ok := loop.As[*v1.PersistentVolume](obj); ok {
		c.newestPV.Forget(pv.Name)
	}
}

// onClass wakes the claims that wait for a class created late.
func (c *Controller) onClass(obj any) {
	class, ok := obj.(*storagev1.VolumeAttributesClass)
	if !ok {
		return
	}
	claims, _ := c.claims.List(labels.Everything())
	for _, claim := range claims {
		if restless(claim) && (modification.SpecClass(claim) == class.Name || modification.TargetClass(claim) == class.Name) {
			c.queue.Add(claimKey(claim.Namespace, claim.Name))
		}
	}
}

// resync revisits restless claims, leaving alone those backing off.
func (c *Controller) resync(context.Context) {
	claims, _ := c.claims.List(labels.Everything())
	for _, claim := range claims {
		key := claimKey(claim.Namespace, claim.Name)
		if restless(claim) && c.queue.NumRequeues(key) == 0 {
			c.queue.Add(key)
		}
	}
}
