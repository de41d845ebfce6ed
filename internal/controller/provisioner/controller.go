package provisioner

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/volplane/volplane/internal/csi"
)

// Config is what a provisioner needs; every dependency is passed in.
type Config struct {
	// Client creates and deletes PVs and updates claims.
	Client kubernetes.Interface
	// Informers must not be started yet; New registers what it needs
	// (claims, PVs, classes, nodes).
	Informers informers.SharedInformerFactory
	// Pool holds the CSI endpoints of the drivers served.
	Pool *csi.Pool
	// Recorder returns the event recorder of a driver; its source should be
	// EventComponent(driver).
	Recorder func(driver string) record.EventRecorder
	// Workers is the number of claim workers and of volume workers (default 4).
	Workers int
	// ResyncPeriod is how often objects with work left are revisited
	// (default 15s).
	ResyncPeriod time.Duration
}

// Controller is the provisioner. Build it with New and start it with Run.
type Controller struct {
	client    kubernetes.Interface
	pool      *csi.Pool
	recorders map[string]record.EventRecorder
	workers   int
	resync    time.Duration

	pvs     corelisters.PersistentVolumeLister
	claims  corelisters.PersistentVolumeClaimLister
	classes storagelisters.StorageClassLister
	nodes   corelisters.NodeLister
	synced  []cache.InformerSynced

	claimQ   workqueue.TypedRateLimitingInterface[string]
	volumeQ  workqueue.TypedRateLimitingInterface[string]
	newClaim *newest[*v1.PersistentVolumeClaim]
	madePVs  *newest[*v1.PersistentVolume]
	events   *eventMemory
	ready    atomic.Bool
}

// New builds a provisioner over the given informers.
func New(cfg Config) (*Controller, error) {
	if cfg.Client == nil || cfg.Informers == nil || cfg.Pool == nil || cfg.Recorder == nil {
		return nil, errors.New("provisioner: Client, Informers, Pool and Recorder are required")
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 4
	}
	if cfg.ResyncPeriod <= 0 {
		cfg.ResyncPeriod = 15 * time.Second
	}
	c := &Controller{
		client: cfg.Client, pool: cfg.Pool, workers: cfg.Workers, resync: cfg.ResyncPeriod,
		recorders: map[string]record.EventRecorder{},
		claimQ:    newQueue("claims"),
		volumeQ:   newQueue("volumes"),
		newClaim:  newNewest[*v1.PersistentVolumeClaim](),
		madePVs:   newNewest[*v1.PersistentVolume](),
		events:    newEventMemory(),
	}
	for _, d := range cfg.Pool.Drivers() {
		c.recorders[d] = cfg.Recorder(d)
	}
	if err := c.registerInformers(cfg.Informers); err != nil {
		return nil, err
	}
	return c, nil
}

// newQueue backs off per key from half a second to five minutes: failures
// here are calls to storage backends, which must not be hammered.
func newQueue(name string) workqueue.TypedRateLimitingInterface[string] {
	return workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](500*time.Millisecond, 5*time.Minute),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "provisioner-" + name})
}

// Run starts the workers once the caches are synced and blocks until ctx is
// done. The informer factory must be started by the caller after New.
func (c *Controller) Run(ctx context.Context) error {
	defer utilruntime.HandleCrash()
	defer c.claimQ.ShutDown()
	defer c.volumeQ.ShutDown()
	logger := klog.FromContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return nil // stopped before the caches synced: a normal shutdown
	}
	c.ready.Store(true)
	defer c.ready.Store(false)
	logger.Info("Provisioner started", "workers", c.workers, "drivers", c.pool.Drivers())
	var wg sync.WaitGroup
	for range c.workers {
		wg.Go(func() { wait.UntilWithContext(ctx, c.claimWorker, time.Second) })
		wg.Go(func() { wait.UntilWithContext(ctx, c.volumeWorker, time.Second) })
	}
	wg.Go(func() { wait.UntilWithContext(ctx, c.resyncPending, c.resync) })
	<-ctx.Done()
	c.claimQ.ShutDown()
	c.volumeQ.ShutDown()
	wg.Wait()
	logger.Info("Provisioner stopped")
	return nil
}

// Ready reports whether the caches are synced and the workers run.
func (c *Controller) Ready() bool { return c.ready.Load() }

func (c *Controller) claimWorker(ctx context.Context) {
	for c.processNext(ctx, c.claimQ, c.syncClaim) {
	}
}

func (c *Controller) volumeWorker(ctx context.Context) {
	for c.processNext(ctx, c.volumeQ, c.syncVolume) {
	}
}

// processNext runs one sync; the queue never hands one key to two workers,
// which serializes everything done for one claim or one PV.
func (c *Controller) processNext(ctx context.Context, q workqueue.TypedRateLimitingInterface[string], sync func(context.Context, string) error) bool {
	key, quit := q.Get()
	if quit {
		return false
	}
	defer q.Done(key)
	if err := sync(ctx, key); err != nil {
		klog.FromContext(ctx).V(2).Info("Sync failed, will retry", "key", key, "err", err)
		q.AddRateLimited(key)
		return true
	}
	q.Forget(key)
	return true
}
