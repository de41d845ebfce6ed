package loop

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
)

// Queue is a work queue and the sync that handles its keys. The queue never
// hands one key to two workers, which serializes everything done for one
// object.
type Queue struct {
	Q    workqueue.TypedRateLimitingInterface[string]
	Sync func(ctx context.Context, key string) error
}

// NewQueue retries a failed key with per-key exponential backoff from base
// to max, and nothing else: the default controller limiter also caps all
// retries together at 10/s, which would throttle a burst of harmless
// conflicts across thousands of objects.
func NewQueue(name string, base, max time.Duration) workqueue.TypedRateLimitingInterface[string] {
	return workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[string](base, max),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: name})
}

// Runner runs one loop: Workers workers per queue once every cache in
// Synced is, and Resync every ResyncPeriod, until the context ends.
type Runner struct {
	Name         string // for logs: "Binder", "Provisioner"
	Synced       []cache.InformerSynced
	Workers      int
	Queues       []Queue
	Resync       func(context.Context)
	ResyncPeriod time.Duration

	ready atomic.Bool
}

// Run blocks until ctx is done, then shuts the queues down and waits for the
// workers. Stopping before the caches synced is a normal shutdown.
func (r *Runner) Run(ctx context.Context, logValues ...any) error {
	defer utilruntime.HandleCrash()
	defer r.shutDown()
	logger := klog.FromContext(ctx)
	if !cache.WaitForCacheSync(ctx.Done(), r.Synced...) {
		return nil
	}
	r.ready.Store(true)
	defer r.ready.Store(false)
	logger.Info(r.Name+" started", append([]any{"workers", r.Workers}, logValues...)...)
	var wg sync.WaitGroup
	for _, q := range r.Queues {
		for range r.Workers {
			wg.Go(func() { wait.UntilWithContext(ctx, func(ctx context.Context) { drain(ctx, q) }, time.Second) })
		}
	}
	if r.Resync != nil {
		wg.Go(func() { wait.UntilWithContext(ctx, r.Resync, r.ResyncPeriod) })
	}
	<-ctx.Done()
	r.shutDown()
	wg.Wait()
	logger.Info(r.Name + " stopped")
	return nil
}

// Ready reports whether the caches are synced and the workers run.
func (r *Runner) Ready() bool { return r.ready.Load() }

func (r *Runner) shutDown() {
	for _, q := range r.Queues {
		q.Q.ShutDown()
	}
}

// drain runs syncs until the queue shuts down.
func drain(ctx context.Context, q Queue) {
	for processNext(ctx, q) {
	}
}

// processNext runs one sync. A failed key is retried with backoff; a
// conflict only means our copy was stale, which is not worth a log line.
func processNext(ctx context.Context, q Queue) bool {
	key, quit := q.Q.Get()
	if quit {
		return false
	}
	defer q.Q.Done(key)
	err := q.Sync(ctx, key)
	switch {
	case err == nil:
		q.Q.Forget(key)
	case apierrors.IsConflict(err):
		q.Q.AddRateLimited(key)
	default:
		klog.FromContext(ctx).V(2).Info("Sync failed, will retry", "key", key, "err", err)
		q.Q.AddRateLimited(key)
	}
	return true
}
