package resizer

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/volplane/volplane/internal/controller/loop"
	"github.com/volplane/volplane/internal/csi"
	"github.com/volplane/volplane/internal/expansion"
)

// Controller is the resizer loop. Build it with New, start it with Run.
type Controller struct {
	client    kubernetes.Interface
	pool      *csi.Pool
	recorders map[string]record.EventRecorder
	claims    corelisters.PersistentVolumeClaimLister
	pvs       corelisters.PersistentVolumeLister
	podIndex  cache.Indexer
	queue     workqueue.TypedRateLimitingInterface[string]
	// newestClaim and newestPV hold what our own writes returned until the
	// informer catches up, so a sync never decides on an older copy.
	newestClaim *loop.Newest[*v1.PersistentVolumeClaim]
	newestPV    *loop.Newest[*v1.PersistentVolume]
	memory      *memory
	slowRetry   time.Duration
	now         func() time.Time
	// holds: Config.Holds.
	holds  func(*v1.PersistentVolume) bool
	runner *loop.Runner
}

// New builds the loop over the given informers.
func New(cfg Config) (*Controller, error) {
	cfg, err := cfg.WithDefaults("resizer")
	if err != nil {
		return nil, err
	}
	c := &Controller{client: cfg.Client, pool: cfg.Pool, recorders: cfg.Recorders(),
		queue:       loop.NewQueue("resizer", cfg.RetryStart, cfg.RetryMax),
		newestClaim: loop.NewNewest[*v1.PersistentVolumeClaim](),
		newestPV:    loop.NewNewest[*v1.PersistentVolume](),
		memory:      newMemory(), slowRetry: cfg.SlowRetry, now: cfg.Now, holds: cfg.Holds}
	claimInf := cfg.Informers.Core().V1().PersistentVolumeClaims()
	pvInf := cfg.Informers.Core().V1().PersistentVolumes()
	podInf := cfg.Informers.Core().V1().Pods()
	c.claims, c.pvs = claimInf.Lister(), pvInf.Lister()
	if err := podInf.Informer().AddIndexers(cache.Indexers{byClaim: claimsUsed}); err != nil {
		return nil, fmt.Errorf("resizer: index: %w", err)
	}
	c.podIndex = podInf.Informer().GetIndexer()
	synced, err := loop.Register(
		loop.Handler{Informer: claimInf.Informer(), Funcs: cache.ResourceEventHandlerFuncs{
			AddFunc: c.onClaim, UpdateFunc: c.onClaimUpdate, DeleteFunc: c.onClaimDeleted}},
		loop.Handler{Informer: pvInf.Informer(), Funcs: cache.ResourceEventHandlerFuncs{
			AddFunc: c.onVolume, UpdateFunc: loop.Updated(c.onVolume), DeleteFunc: c.onVolumeDeleted}},
		loop.Handler{Informer: podInf.Informer(), Funcs: cache.ResourceEventHandlerFuncs{
			UpdateFunc: c.onPodUpdate, DeleteFunc: c.onPodGone}})
	if err != nil {
		return nil, fmt.Errorf("resizer: %w", err)
	}
	c.runner = &loop.Runner{Name: "Resizer", Synced: synced, Workers: cfg.Workers,
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

func claimKey(claim *v1.PersistentVolumeClaim) string { return claim.Namespace + "/" + claim.Name }

// onClaim queues a claim that asks for more than it has. A claim at rest
// (request met) never is: nothing of ours is to do for it.
func (c *Controller) onClaim(obj any) {
	claim, ok := obj.(*v1.PersistentVolumeClaim)
	if !ok {
		return
	}
	key := claimKey(claim)
	claim = c.newestClaim.Observe(key, claim)
	if expansion.NeedsResize(claim) {
		c.queue.Add(key)
	}
}

// onClaimUpdate ignores the versions our own writes made: the sync that
// wrote them already went on from there.
func (c *Controller) onClaimUpdate(_, cur any) {
	claim, ok := cur.(*v1.PersistentVolumeClaim)
	if !ok || c.newestClaim.IsOwnWrite(claimKey(claim), claim) {
		return
	}
	c.onClaim(claim)
}

func (c *Controller) onClaimDeleted(obj any) {
	if claim, ok := loop.As[*v1.PersistentVolumeClaim](obj); ok {
		key := claimKey(claim)
		c.newestClaim.Forget(key)
		c.memory.forget(key)
		c.queue.Forget(key)
	}
}

// onVolume wakes the claim a PV is bound to when that claim waits for
// more: the sync may have found the PV missing from the cache.
func (c *Controller) onVolume(obj any) {
	pv, ok := obj.(*v1.PersistentVolume)
	if !ok {
		return
	}
	pv = c.newestPV.Observe(pv.Name, pv)
	if c.newestPV.IsOwnWrite(pv.Name, pv) {
		return
	}
	ref := pv.Spec.ClaimRef
	if ref == nil || pv.Spec.CSI == nil || !c.pool.Serves(pv.Spec.CSI.Driver) {
		return
	}
	if claim, err := c.claims.PersistentVolumeClaims(ref.Namespace).Get(ref.Name); err == nil && expansion.NeedsResize(claim) {
		c.queue.Add(ref.Namespace + "/" + ref.Name)
	}
}

func (c *Controller) onVolumeDeleted(obj any) {
	if pv, ok := loop.As[*v1.PersistentVolume](obj); ok {
		c.newestPV.Forget(pv.Name)
	}
}

// resync revisits the claims that still ask for more, leaving alone the
// keys waiting out a backoff (adding them would retry at once).
func (c *Controller) resync(context.Context) {
	claims, _ := c.claims.List(labels.Everything())
	for _, claim := range claims {
		key := claimKey(claim)
		if expansion.NeedsResize(claim) && c.queue.NumRequeues(key) == 0 {
			c.queue.Add(key)
		}
	}
}
