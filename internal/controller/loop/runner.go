package loop

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
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
	// Recent, if set, is told each key's sync as it ends, failed or not.
	Recent *Recent
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

	ready  atomic.Bool
	panics atomic.Int64
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
			wg.Go(func() { wait.UntilWithContext(ctx, func(ctx context.Context) { r.drain(ctx, q) }, time.Second) })
		}
	}
	if r.Resync != nil {
		wg.Go(func() { wait.UntilWithContext(ctx, r.resync, r.ResyncPeriod) })
	}
	<-ctx.Done()
	r.shutDown()
	wg.Wait()
	logger.Info(r.Name + " stopped")
	return nil
}

// Ready reports whether the caches are synced and the workers run.
func (r *Runner) Ready() bool { return r.ready.Load() }

// Panics counts the syncs and resyncs that panicked and were recovered.
func (r *Runner) Panics() int64 { return r.panics.Load() }

func (r *Runner) shutDown() {
	for _, q := range r.Queues {
		q.Q.ShutDown()
	}
}

// drain runs syncs until the queue shuts down.
func (r *Runner) drain(ctx context.Context, q Queue) {
	for r.processNext(ctx, q) {
	}
}

// processNext runs one sync. A failed key is retried with backoff; a
// conflict only means our copy was stale, which is not worth a log line. A
// sync that panics counts as failed: one bad object must not stop the
// process and with it every other object's sync.
func (r *Runner) processNext(ctx context.Context, q Queue) bool {
	key, quit := q.Q.Get()
	if quit {
		return false
	}
	defer q.Q.Done(key)
	err := r.sync(ctx, q, key)
	if q.Recent != nil {
		q.Recent.Synced(key)
	}
	switch {
	case err == nil:
		q.Q.Forget(key)
	case apierrors.IsConflict(err):
		q.Q.AddRateLimited(key)
	case errors.As(err, new(*panicError)):
		// Logged where it was recovered, with the stack.
		q.Q.AddRateLimited(key)
	default:
		klog.FromContext(ctx).V(2).Info("Sync failed, will retry", "key", key, "err", err)
		q.Q.AddRateLimited(key)
	}
	return true
}

// panicError is a recovered panic of a sync.
type panicError struct{ value any }

func (e *panicError) Error() string { return fmt.Sprintf("sync panicked: %v", e.value) }

// sync runs q.Sync, turning a panic into a panicError. utilruntime.HandleCrash
// would not do: it re-panics unless the process-wide ReallyCrash is off.
func (r *Runner) sync(ctx context.Context, q Queue, key string) (err error) {
	defer func() {
		if v := recover(); v != nil {
			r.panics.Add(1)
			err = &panicError{value: v}
			klog.FromContext(ctx).Error(err, "Sync panicked, will retry", "loop", r.Name, "key", key,
				"stack", string(debug.Stack()))
		}
	}()
	return q.Sync(ctx, key)
}

// resync runs r.Resync, recovering a panic: the next period tries again.
func (r *Runner) resync(ctx context.Context) {
	defer func() {
		if v := recover(); v != nil {
			r.panics.Add(1)
			klog.FromContext(ctx).Error(&panicError{value: v}, "Resync panicked", "loop", r.Name,
				"stack", string(debug.Stack()))
		}
	}()
	r.Resync(ctx)
}
