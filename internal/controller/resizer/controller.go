package resizer

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/volplane/volplane/internal/controller/loop"
	"github.com/volplane/volplane/internal/controller/resizing"
	"github.com/volplane/volplane/internal/expansion"
	"github.com/volplane/volplane/internal/informerindex"
	"github.com/volplane/volplane/internal/protection"
)

// Controller is the resizer loop. Build it with New, start it with Run.
type Controller struct {
	*resizing.Base
	// pods is the shared pod index (informerindex.ClaimOfPod), asked only
	// for a driver that refused an expansion as in use.
	pods   cache.Indexer
	runner *loop.Runner
}

// New builds the loop over the given informers.
func New(cfg Config) (*Controller, error) {
	base, err := resizing.NewBase(cfg, "resizer", "resizer")
	if err != nil {
		return nil, err
	}
	c := &Controller{Base: base}
	podInf, err := informerindex.Pods(c.Informers)
	if err != nil {
		return nil, fmt.Errorf("resizer: %w", err)
	}
	c.pods = podInf.GetIndexer()
	synced, err := loop.Register(
		loop.Handler{Informer: c.ClaimInformer, Funcs: c.ClaimHandler(expansion.NeedsResize)},
		loop.Handler{Informer: c.PVInformer, Funcs: c.VolumeHandler(expansion.NeedsResize)},
		loop.Handler{Informer: podInf, Funcs: cache.ResourceEventHandlerFuncs{
			UpdateFunc: c.onPodUpdate, DeleteFunc: c.onPodGone}})
	if err != nil {
		return nil, fmt.Errorf("resizer: %w", err)
	}
	c.runner = c.Runner("Resizer", synced, c.syncClaim, c.Resync(expansion.NeedsResize))
	return c, nil
}

// Run starts the workers once the caches are synced and blocks until ctx
// is done. The informer factory must be started by the caller after New.
func (c *Controller) Run(ctx context.Context) error {
	return c.runner.Run(ctx, "drivers", c.Pool.Drivers())
}

// Ready reports whether the caches are synced and the workers run.
func (c *Controller) Ready() bool { return c.runner.Ready() }

// onPodGone wakes the claims a pod that ended or went used, when their
// driver refused to expand them in use: they may be expanded now.
func (c *Controller) onPodGone(obj any) {
	pod, ok := loop.As[*v1.Pod](obj)
	if !ok {
		return
	}
	for _, key := range protection.ClaimKeys(pod) { // as the index keys pods
		if c.Memory.RefusedInUse(key) && !c.inUse(key) {
			c.Queue.Add(key)
		}
	}
}

func (c *Controller) onPodUpdate(_, cur any) {
	if pod, ok := cur.(*v1.Pod); ok && ended(pod) {
		c.onPodGone(pod)
	}
}

// inUse says whether a running pod uses the claim: the reference's in-use
// store holds only pods neither Succeeded nor Failed, while the shared
// index holds every phase.
func (c *Controller) inUse(key string) bool {
	pods, err := informerindex.PodsUsing(c.pods, key)
	if err != nil {
		return true // unsure: count it as in use, as waiting is safe
	}
	for _, pod := range pods {
		if !ended(pod) {
			return true
		}
	}
	return false
}

func ended(pod *v1.Pod) bool {
	return pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed
}
