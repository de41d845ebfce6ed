package protection

import (
	"context"
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/volplane/volplane/internal/binding"
	"github.com/volplane/volplane/internal/controller/loop"
	"github.com/volplane/volplane/internal/informerindex"
	"github.com/volplane/volplane/internal/protection"
)

// ClaimLoop is the pvc-protection loop. Build it with NewClaimLoop and start
// it with Run.
type ClaimLoop struct {
	client  kubernetes.Interface
	workers int
	// trackUnused keeps the claim condition Unused (Config.TrackUnused).
	trackUnused bool
	claims      corelisters.PersistentVolumeClaimLister
	pods        cache.Indexer
	// q holds namespaces; pending holds each one's queued claims.
	q       workqueue.TypedRateLimitingInterface[string]
	pending *pending
	newest  *loop.Newest[*v1.PersistentVolumeClaim]
	// unsettled: the claims last seen with work to do (onClaim), all a
	// resync looks at.
	unsettled *loop.Unsettled
	runner    *loop.Runner
}

// NewClaimLoop builds the pvc-protection loop over the given informers.
func NewClaimLoop(cfg Config) (*ClaimLoop, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	c := &ClaimLoop{
		client: cfg.Client, workers: cfg.Workers, trackUnused: cfg.TrackUnused,
		q:         loop.NewQueue("pvcprotection", retryBase, retryMax),
		pending:   newPending(),
		newest:    loop.NewNewest[*v1.PersistentVolumeClaim](),
		unsettled: loop.NewUnsettled(),
	}
	claimInf := cfg.Informers.Core().V1().PersistentVolumeClaims()
	podInf, err := informerindex.Pods(cfg.Informers)
	if err != nil {
		return nil, fmt.Errorf("pvc-protection: %w", err)
	}
	c.claims = claimInf.Lister()
	c.pods = podInf.GetIndexer()
	synced, err := loop.Register(
		loop.Handler{Informer: claimInf.Informer(), Funcs: cache.ResourceEventHandlerFuncs{
			AddFunc: c.onClaim, UpdateFunc: loop.Updated(c.onClaim), DeleteFunc: c.onClaimDeleted}},
		loop.Handler{Informer: podInf, Funcs: cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { c.onPod(obj, protection.PodChanged) },
			UpdateFunc: c.onPodUpdate,
			DeleteFunc: func(obj any) { c.onPod(obj, protection.PodDeleted) }}},
	)
	if err != nil {
		return nil, fmt.Errorf("pvc-protection: %w", err)
	}
	c.runner = &loop.Runner{Name: "PVC protection", Synced: synced, Workers: cfg.Workers,
		Queues: []loop.Queue{{Q: c.q, Sync: c.syncNamespace}},
		Resync: c.resync, ResyncPeriod: cfg.ResyncPeriod, Metrics: cfg.Metrics}
	return c, nil
}

// Run starts the workers once the caches are synced and blocks until ctx is
// done. The informer factory must be started by the caller after New.
func (c *ClaimLoop) Run(ctx context.Context) error { return c.runner.Run(ctx) }

// Ready reports whether the caches are synced and the workers run.
func (c *ClaimLoop) Ready() bool { return c.runner.Ready() }

func (c *ClaimLoop) enqueue(key string) {
	ns, name, _ := strings.Cut(key, "/")
	c.pending.add(ns, name)
	c.q.Add(ns)
}

// onClaim queues a claim that lacks the finalizer or is being deleted with
// it, or whose Unused condition is tracked but not there yet; claims at
// rest are not worth a sync.
func (c *ClaimLoop) onClaim(obj any) {
	claim, ok := obj.(*v1.PersistentVolumeClaim)
	if !ok {
		return
	}
	key := binding.ClaimKey(claim)
	claim = c.newest.Observe(key, claim)
	work := protection.DecideClaim(protection.ClaimFacts{Claim: claim}).Action != protection.None ||
		protection.UnusedTracked(c.trackUnused, claim) && protection.UnusedCondition(claim) == nil
	c.unsettled.Saw(key, !work)
	if work {
		c.enqueue(key)
	}
}

func (c *ClaimLoop) onClaimDeleted(obj any) {
	if claim, ok := loop.As[*v1.PersistentVolumeClaim](obj); ok {
		c.newest.Forget(binding.ClaimKey(claim))
		c.unsettled.Gone(binding.ClaimKey(claim))
	}
}

// onPod queues the claims of a pod whose event may free them; with the
// Unused condition tracked, every pod event may change it (the reference
// drops its filter then).
func (c *ClaimLoop) onPod(obj any, e protection.PodEvent) {
	pod, ok := loop.As[*v1.Pod](obj)
	if !ok || !c.trackUnused && !protection.PodEventMayRelease(pod, e) {
		return
	}
	for _, key := range protection.ClaimKeys(pod) {
		c.enqueue(key)
	}
}

// onPodUpdate: an update may hide the deletion of a pod and the creation of
// another of the same name (a new UID); the old pod then counts as deleted,
// or a claim only it kept would wait forever.
func (c *ClaimLoop) onPodUpdate(old, cur any) {
	c.onPod(cur, protection.PodChanged)
	if o, ok := old.(*v1.Pod); ok {
		if n, ok := cur.(*v1.Pod); ok && o.UID != n.UID {
			c.onPod(o, protection.PodDeleted)
		}
	}
}

// resync revisits the claims last seen with work to do (onClaim keeps
// them): a safety net, the loop is event driven. Claims kept by a pod in
// the cache cost no request.
func (c *ClaimLoop) resync(context.Context) {
	for _, key := range c.unsettled.Keys() {
		c.enqueue(key)
	}
}
