package binder

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
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

	"github.com/volplane/volplane/internal/index"
)

// EventComponent is the event source, the same as the reference binder's, so
// `kubectl get events` filters written for it keep working.
const EventComponent = "persistentvolume-controller"

// Config is what a binder needs; every dependency is passed in.
type Config struct {
	// Client writes PVs and claims (and reads them live before releasing).
	Client kubernetes.Interface
	// Informers must not be started yet; New registers what it needs.
	Informers informers.SharedInformerFactory
	// Recorder records events with source EventComponent.
	Recorder record.EventRecorder
	// Metrics receives the binder's series; nil means a private registry.
	Metrics prometheus.Registerer
	// Workers is the number of claim workers and of volume workers (default 4).
	Workers int
	// ResyncPeriod is how often objects not yet at rest are revisited
	// (default 15s, as the reference): a safety net, not the way we notice work.
	ResyncPeriod time.Duration
	// RecyclerNamespace, RecyclerImage and RecycleTimeout shape the pods
	// that scrub volumes with reclaim policy Recycle (defaults: "default",
	// busybox, 5 minutes).
	RecyclerNamespace string
	RecyclerImage     string
	RecycleTimeout    time.Duration
}

// Controller is the binder. Build it with New and start it with Run.
type Controller struct {
	client   kubernetes.Interface
	recorder record.EventRecorder
	metrics  *metrics
	ops      *operations
	workers  int
	resync   time.Duration

	recycleNamespace string
	recycleImage     string
	recycleTimeout   time.Duration

	pvs      corelisters.PersistentVolumeLister
	claims   corelisters.PersistentVolumeClaimLister
	classes  storagelisters.StorageClassLister
	pods     cache.Indexer
	synced   []cache.InformerSynced
	claimQ   workqueue.TypedRateLimitingInterface[string]
	volumeQ  workqueue.TypedRateLimitingInterface[string]
	pvLocks  *keyedMutex
	newPV    *newest[*v1.PersistentVolume]
	newClaim *newest[*v1.PersistentVolumeClaim]
	events   *eventMemory

	// mu guards the index, the reservations it holds and the waiting claims:
	// choosing a PV and reserving it must be one step.
	ready atomic.Bool

	mu      sync.Mutex
	index   *index.Index
	waiting *waitingClaims
}

// New builds a binder over the given informers.
func New(cfg Config) (*Controller, error) {
	if cfg.Client == nil || cfg.Informers == nil || cfg.Recorder == nil {
		return nil, errors.New("binder: Client, Informers and Recorder are required")
	}
	if cfg.Workers <= 0 {
		cfg.Workers = 4
	}
	if cfg.ResyncPeriod <= 0 {
		cfg.ResyncPeriod = 15 * time.Second
	}
	if cfg.RecyclerNamespace == "" {
		cfg.RecyclerNamespace = "default"
	}
	if cfg.RecyclerImage == "" {
		cfg.RecyclerImage = defaultRecyclerImage
	}
	if cfg.RecycleTimeout <= 0 {
		cfg.RecycleTimeout = 5 * time.Minute
	}
	if cfg.Metrics == nil {
		cfg.Metrics = prometheus.NewRegistry()
	}
	c := &Controller{
		client: cfg.Client, recorder: cfg.Recorder, workers: cfg.Workers, resync: cfg.ResyncPeriod,
		recycleNamespace: cfg.RecyclerNamespace, recycleImage: cfg.RecyclerImage, recycleTimeout: cfg.RecycleTimeout,
		claimQ:   newQueue("claims"),
		volumeQ:  newQueue("volumes"),
		pvLocks:  newKeyedMutex(),
		newPV:    newNewest[*v1.PersistentVolume](),
		newClaim: newNewest[*v1.PersistentVolumeClaim](),
		events:   newEventMemory(),
		index:    index.New(),
		waiting:  newWaitingClaims(),
	}
	if err := c.registerInformers(cfg.Informers); err != nil {
		return nil, err
	}
	m, err := newMetrics(cfg.Metrics, c.pvs, c.claims)
	if err != nil {
		return nil, fmt.Errorf("binder: register metrics: %w", err)
	}
	c.metrics = m
	c.ops = newOperations(m)
	return c, nil
}

// newQueue retries failed keys with per-key exponential backoff only: the
// default controller limiter also caps all retries at 10/s together, which
// would throttle a burst of harmless conflicts across thousands of binds.
func newQueue(name string) workqueue.TypedRateLimitingInterface[string] {
	return workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](5*time.Millisecond, 30*time.Second),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: "binder-" + name})
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
	logger.Info("Binder started", "workers", c.workers)
	var wg sync.WaitGroup
	for range c.workers {
		wg.Go(func() { wait.UntilWithContext(ctx, c.claimWorker, time.Second) })
		wg.Go(func() { wait.UntilWithContext(ctx, c.volumeWorker, time.Second) })
	}
	wg.Go(func() { wait.UntilWithContext(ctx, c.resyncUnsettled, c.resync) })
	<-ctx.Done()
	c.claimQ.ShutDown()
	c.volumeQ.ShutDown()
	wg.Wait()
	logger.Info("Binder stopped")
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

// processNext runs one sync. A conflict means our copy was stale: it is
// retried like any failure, but is not worth a log line.
func (c *Controller) processNext(ctx context.Context, q workqueue.TypedRateLimitingInterface[string], sync func(context.Context, string) error) bool {
	key, quit := q.Get()
	if quit {
		return false
	}
	defer q.Done(key)
	err := sync(ctx, key)
	switch {
	case err == nil:
		q.Forget(key)
	case isConflict(err):
		q.AddRateLimited(key)
	default:
		klog.FromContext(ctx).V(2).Info("Sync failed, will retry", "key", key, "err", err)
		q.AddRateLimited(key)
	}
	return true
}
