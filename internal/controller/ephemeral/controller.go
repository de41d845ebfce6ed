package ephemeral

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	"github.com/volplane/volplane/internal/controller/loop"
	"github.com/volplane/volplane/internal/ephemeral"
	"github.com/volplane/volplane/internal/informerindex"
)

// EventComponent is the source of the loop's events, the reference's.
const EventComponent = "ephemeral_volume"

// Config is what the loop needs; every dependency is passed in.
type Config struct {
	// Client creates the claims.
	Client kubernetes.Interface
	// Informers must not be started yet; the loop registers pods and
	// claims.
	Informers informers.SharedInformerFactory
	// Recorder records the FailedBinding warnings; its source should be
	// EventComponent.
	Recorder record.EventRecorder
	// Workers (default loop.DefaultWorkers) and ResyncPeriod (default
	// loop.DefaultResyncPeriod).
	Workers      int
	ResyncPeriod time.Duration
	// Metrics, if set, takes the reference's counters and the runner's
	// stuck-key metrics.
	Metrics prometheus.Registerer
}

// Retries of a pod back off from retryBase to retryMax (the reference's
// controller rate limiter, without its overall bucket).
const (
	retryBase = 5 * time.Millisecond
	retryMax  = 1000 * time.Second
)

// Controller is the ephemeral-volume loop. Build it with New, start it with
// Run.
type Controller struct {
	client   kubernetes.Interface
	recorder record.EventRecorder
	pods     corelisters.PodLister
	claims   corelisters.PersistentVolumeClaimLister
	podIndex cache.Indexer
	q        workqueue.TypedRateLimitingInterface[string]
	metrics  metrics
	runner   *loop.Runner
}

// New builds the loop over the given informers.
func New(cfg Config) (*Controller, error) {
	if cfg.Client == nil || cfg.Informers == nil || cfg.Recorder == nil {
		return nil, errors.New("ephemeral-volume: Client, Informers and Recorder are required")
	}
	cfg.Workers, cfg.ResyncPeriod = loop.WithDefaults(cfg.Workers, cfg.ResyncPeriod)
	c := &Controller{client: cfg.Client, recorder: cfg.Recorder, metrics: newMetrics(),
		q: loop.NewQueue("ephemeral_volume", retryBase, retryMax)}
	if cfg.Metrics != nil {
		if err := c.metrics.register(cfg.Metrics); err != nil {
			return nil, fmt.Errorf("ephemeral-volume metrics: %w", err)
		}
	}
	podInf, err := informerindex.Pods(cfg.Informers)
	if err != nil {
		return nil, fmt.Errorf("ephemeral-volume: %w", err)
	}
	claimInf := cfg.Informers.Core().V1().PersistentVolumeClaims()
	c.pods, c.claims, c.podIndex = cfg.Informers.Core().V1().Pods().Lister(), claimInf.Lister(), podInf.GetIndexer()
	synced, err := loop.Register(
		loop.Handler{Informer: podInf, Funcs: cache.ResourceEventHandlerFuncs{AddFunc: c.onPod}},
		loop.Handler{Informer: claimInf.Informer(), Funcs: cache.ResourceEventHandlerFuncs{DeleteFunc: c.onClaimDeleted}},
	)
	if err != nil {
		return nil, fmt.Errorf("ephemeral-volume: %w", err)
	}
	c.runner = &loop.Runner{Name: "Ephemeral volume", Synced: synced, Workers: cfg.Workers,
		Queues: []loop.Queue{{Q: c.q, Sync: c.sync}}, Resync: c.resync, ResyncPeriod: cfg.ResyncPeriod,
		Metrics: cfg.Metrics}
	return c, nil
}

// Run starts the workers once the caches are synced and blocks until ctx
// is done. The informer factory must be started by the caller after New.
func (c *Controller) Run(ctx context.Context) error { return c.runner.Run(ctx) }

// Ready reports whether the caches are synced and the workers run.
func (c *Controller) Ready() bool { return c.runner.Ready() }

// onPod queues a pod with an ephemeral volume that is not being deleted.
func (c *Controller) onPod(obj any) {
	if pod, ok := loop.As[*v1.Pod](obj); ok && ephemeral.HasEphemeral(pod) {
		c.q.Add(cache.MetaObjectToName(pod).String())
	}
}

// onClaimDeleted queues the pods naming a deleted claim: one of them may
// need it made again.
func (c *Controller) onClaimDeleted(obj any) {
	claim, ok := loop.As[*v1.PersistentVolumeClaim](obj)
	if !ok {
		return
	}
	pods, err := informerindex.PodsUsing(c.podIndex, cache.MetaObjectToName(claim).String())
	if err != nil {
		return
	}
	for _, p := range pods {
		c.onPod(p)
	}
}

// resync queues the pods one of whose ephemeral claims is not in the
// cache: a safety net, the loop is event driven.
func (c *Controller) resync(context.Context) {
	pods, _ := c.pods.List(labels.Everything())
	for _, pod := range pods {
		for _, d := range ephemeral.Decide(pod, c.cachedClaim(pod.Namespace)) {
			if d.Action != ephemeral.None {
				c.onPod(pod)
				break
			}
		}
	}
}

// cachedClaim looks claims of the namespace up in the cache.
func (c *Controller) cachedClaim(ns string) func(string) *v1.PersistentVolumeClaim {
	return func(name string) *v1.PersistentVolumeClaim {
		claim, err := c.claims.PersistentVolumeClaims(ns).Get(name)
		if err != nil {
			return nil
		}
		return claim
	}
}

// sync decides the pod's ephemeral volumes and makes the missing claims.
// A conflict or a failed create records the pod's warning and returns an
// error, so the pod is retried with backoff.
func (c *Controller) sync(ctx context.Context, key string) (loop.Result, error) {
	logger := klog.FromContext(ctx)
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return loop.Done(), nil
	}
	pod, err := c.pods.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return loop.Done(), nil
	}
	if err != nil {
		return loop.Done(), err
	}
	for _, d := range ephemeral.Decide(pod, c.cachedClaim(ns)) {
		switch d.Action {
		case ephemeral.None:
			logger.V(5).Info("Ephemeral: PVC already created", "pod", klog.KObj(pod), "volumeName", d.Volume, "pvc", klog.KRef(ns, d.Claim))
		case ephemeral.Conflict:
			msg := d.Message(pod)
			c.recorder.Event(pod, v1.EventTypeWarning, ephemeral.EventReason, msg)
			return loop.Done(), fmt.Errorf("pod %s: %s", key, msg)
		case ephemeral.Create:
			if err := c.create(ctx, pod, d); err != nil {
				c.recorder.Event(pod, v1.EventTypeWarning, ephemeral.EventReason, fmt.Sprintf("ephemeral volume %s: %v", d.Volume, err))
				return loop.Done(), fmt.Errorf("pod %s, ephemeral volume %s: %w", key, d.Volume, err)
			}
		}
	}
	return loop.Done(), nil
}

// create makes the volume's claim, controlled by the pod.
func (c *Controller) create(ctx context.Context, pod *v1.Pod, d ephemeral.Decision) error {
	vol := ephemeral.Volume(pod, d.Volume)
	claim := ephemeral.NewClaim(pod, vol)
	c.metrics.attempts.Inc()
	if _, err := c.client.CoreV1().PersistentVolumeClaims(pod.Namespace).Create(ctx, claim, metav1.CreateOptions{}); err != nil {
		c.metrics.failures.Inc()
		return fmt.Errorf("create PVC %s: %w", claim.Name, err)
	}
	klog.FromContext(ctx).V(3).Info("Created PVC for ephemeral volume", "pod", klog.KObj(pod), "volumeName", d.Volume, "pvc", klog.KObj(claim))
	return nil
}

// metrics are the reference's counters, under its names.
type metrics struct {
	attempts, failures prometheus.Counter
}

func newMetrics() metrics {
	return metrics{
		attempts: prometheus.NewCounter(prometheus.CounterOpts{Name: "ephemeral_volume_controller_create_total",
			Help: "Number of PersistentVolumeClaim creation requests"}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{Name: "ephemeral_volume_controller_create_failures_total",
			Help: "Number of PersistentVolumeClaim creation requests that failed"}),
	}
}

func (m metrics) register(reg prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.attempts, m.failures} {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
