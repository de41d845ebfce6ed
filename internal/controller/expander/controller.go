package expander

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/volplane/volplane/internal/binding"
	"github.com/volplane/volplane/internal/controller/loop"
)

// Controller is the expander loop. Build it with New, start it with Run.
type Controller struct {
	client   kubernetes.Interface
	recorder record.EventRecorder
	claims   corelisters.PersistentVolumeClaimLister
	pvs      corelisters.PersistentVolumeLister
	q        workqueue.TypedRateLimitingInterface[string]
	runner   *loop.Runner
}

// New builds the loop over the given informers.
func New(cfg Config) (*Controller, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	c := &Controller{client: cfg.Client, recorder: cfg.Recorder,
		q: loop.NewQueue("volume_expand", cfg.RetryStart, cfg.RetryMax)}
	claimInf := cfg.Informers.Core().V1().PersistentVolumeClaims()
	pvInf := cfg.Informers.Core().V1().PersistentVolumes()
	c.claims, c.pvs = claimInf.Lister(), pvInf.Lister()
	synced, err := loop.Register(loop.Handler{Informer: claimInf.Informer(), Funcs: cache.ResourceEventHandlerFuncs{
		AddFunc: c.onClaim, UpdateFunc: c.onClaimUpdate}})
	if err != nil {
		return nil, fmt.Errorf("expander: %w", err)
	}
	// PVs are only read, never waited on: a claim whose PV is not cached
	// yet is retried.
	synced = append(synced, pvInf.Informer().HasSynced)
	c.runner = &loop.Runner{Name: "Expander", Synced: synced, Workers: cfg.Workers,
		Queues: []loop.Queue{{Q: c.q, Sync: c.sync}}, Metrics: cfg.Metrics}
	return c, nil
}

// Run starts the workers once the caches are synced and blocks until ctx
// is done. The informer factory must be started by the caller after New.
func (c *Controller) Run(ctx context.Context) error { return c.runner.Run(ctx) }

// Ready reports whether the caches are synced and the workers run.
func (c *Controller) Ready() bool { return c.runner.Ready() }

// onClaim queues a Bound claim: every one the informer adds, at start
// included, as the reference does.
func (c *Controller) onClaim(obj any) {
	if claim, ok := obj.(*v1.PersistentVolumeClaim); ok && claim.Status.Phase == v1.ClaimBound {
		c.q.Add(binding.ClaimKey(claim))
	}
}

// onClaimUpdate queues a Bound claim whose request or capacity grew, the
// reference's two triggers; any other update (ours included) is ignored.
func (c *Controller) onClaimUpdate(old, cur any) {
	o, okO := old.(*v1.PersistentVolumeClaim)
	n, okN := cur.(*v1.PersistentVolumeClaim)
	if !okO || !okN {
		return
	}
	if grew(o.Spec.Resources.Requests, n.Spec.Resources.Requests) || grew(o.Status.Capacity, n.Status.Capacity) {
		c.onClaim(n)
	}
}

// grew says whether the storage in cur exceeds the storage in old.
func grew(old, cur v1.ResourceList) bool {
	o, n := old[v1.ResourceStorage], cur[v1.ResourceStorage]
	return n.Cmp(o) > 0
}
