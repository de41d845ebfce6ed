package loop

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// Queue is a work queue and the sync that handles its keys. The queue never
// hands one key to two workers, which serializes everything done for one
// object.
type Queue struct {
	Q workqueue.TypedRateLimitingInterface[string]
	// Sync handles one key and says what is next for it (see Result).
	Sync func(ctx context.Context, key string) (Result, error)
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
	// Metrics, if set, takes the stuck-key metrics and the queue depth
	// (shared by every runner of the registry, labelled by Name).
	Metrics prometheus.Registerer
	// StuckAfter is how long a key may keep failing before it is logged at
	// error level and counted; DefaultStuckAfter when zero.
	StuckAfter time.Duration
	// Clock times failing keys; the wall clock when nil.
	Clock clock.PassiveClock

	ready  atomic.Bool
	panics atomic.Int64
	// syncs counts the syncs run (volplane_loop_syncs_total), with Metrics.
	syncs prometheus.Counter
}

// Run blocks until ctx is done, then shuts the queues down and waits for the
// workers. Stopping before the caches synced is a normal shutdown.
func (r *Runner) Run(ctx context.Context, logValues ...any) error {
	defer utilruntime.HandleCrash()
	defer r.shutDown()
	logger := klog.FromContext(ctx)
	var metrics *stuckMetrics
	if r.Metrics != nil {
		m, err := newStuckMetrics(r.Metrics)
		if err != nil {
			return fmt.Errorf("%s metrics: %w", r.Name, err)
		}
		metrics = m
		depths, err := register(r.Metrics, newQueueDepths())
		if err != nil {
			return fmt.Errorf("%s metrics: %w", r.Name, err)
		}
		defer depths.track(r)()
		syncs, err := register(r.Metrics, newSyncCounts())
		if err != nil {
			return fmt.Errorf("%s metrics: %w", r.Name, err)
		}
		r.syncs = syncs.WithLabelValues(r.Name)
	}
	if !cache.WaitForCacheSync(ctx.Done(), r.Synced...) {
		return nil
	}
	r.ready.Store(true)
	defer r.ready.Store(false)
	logger.Info(r.Name+" started", append([]any{"workers", r.Workers}, logValues...)...)
	var wg sync.WaitGroup
	for _, q := range r.Queues {
		stuck := newStuckKeys(r.Name, r.Clock, r.StuckAfter, metrics)
		for range r.Workers {
			wg.Go(func() { wait.UntilWithContext(ctx, func(ctx context.Context) { r.drain(ctx, q, stuck) }, time.Second) })
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
func (r *Runner) drain(ctx context.Context, q Queue, stuck *stuckKeys) {
	for r.processNext(ctx, q, stuck) {
	}
}

// processNext runs one sync and does what its Result and error ask. A
// failed key is retried with backoff; a conflict only means our copy was
// stale, which is not worth a log line. A sync that panics counts as
// failed: one bad object must not stop the process and with it every other
// object's sync.
func (r *Runner) processNext(ctx context.Context, q Queue, stuck *stuckKeys) bool {
	key, quit := q.Q.Get()
	if quit {
		return false
	}
	defer q.Q.Done(key)
	res, err := r.sync(ctx, q, key)
	if r.syncs != nil {
		r.syncs.Inc()
	}
	if q.Recent != nil {
		q.Recent.Synced(key)
	}
	logger := klog.FromContext(ctx)
	if err != nil {
		r.failed(ctx, q, stuck, key, err)
		return true
	}
	q.Q.Forget(key)
	if reason := res.Reason(); reason != nil {
		if stuck.gaveUp(key) {
			logger.Error(reason, "Sync gave up until the object changes", "loop", r.Name, "key", key)
		}
		return true
	}
	if stuck.succeeded(key) {
		logger.Info("Sync succeeded again", "loop", r.Name, "key", key)
	}
	switch {
	case res.Immediately():
		q.Q.Add(key)
	case res.RequeueAfter() > 0:
		q.Q.AddAfter(key, res.RequeueAfter())
	}
	return true
}

// failed retries key with backoff and reports it once it has failed for
// longer than the runner's StuckAfter.
func (r *Runner) failed(ctx context.Context, q Queue, stuck *stuckKeys, key string, err error) {
	q.Q.AddRateLimited(key)
	logger := klog.FromContext(ctx)
	if isNew, since := stuck.failed(key); isNew {
		logger.Error(err, "Sync keeps failing, still retrying", "loop", r.Name, "key", key,
			"failingFor", stuck.clock.Since(since).Round(time.Second))
		return
	}
	switch {
	case apierrors.IsConflict(err):
	case errors.As(err, new(*panicError)):
		// Logged where it was recovered, with the stack.
	default:
		logger.V(2).Info("Sync failed, will retry", "loop", r.Name, "key", key, "err", err)
	}
}

// panicError is a recovered panic of a sync.
type panicError struct{ value any }

func (e *panicError) Error() string { return fmt.Sprintf("sync panicked: %v", e.value) }

// sync runs q.Sync, turning a panic into a panicError. utilruntime.HandleCrash
// would not do: it re-panics unless the process-wide ReallyCrash is off.
func (r *Runner) sync(ctx context.Context, q Queue, key string) (res Result, err error) {
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
