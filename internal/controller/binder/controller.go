package binder

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/volplane/volplane/internal/controller/loop"
	"github.com/volplane/volplane/internal/index"
	"github.com/volplane/volplane/internal/keyedmutex"
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
	// Workers is the number of claim workers and of volume workers (default loop.DefaultWorkers).
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
	// Clock dates the tallies of waiting claims, times operations and
	// failing keys (default the real clock).
	Clock clock.PassiveClock
}

// Controller is the binder. Build it with New and start it with Run.
type Controller struct {
	client   kubernetes.Interface
	recorder record.EventRecorder
	clock    clock.PassiveClock
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
	pvLocks  *keyedmutex.Mutex
	newPV    *loop.Newest[*v1.PersistentVolume]
	newClaim *loop.Newest[*v1.PersistentVolumeClaim]
	events   *loop.EventMemory
	runner   *loop.Runner

	// mu guards the index, the reservations it holds and the waiting claims:
	// choosing a PV and reserving it must be one step.
	mu      sync.Mutex
	index   *index.Index
	waiting *index.Waiting
	tallies *index.Tallies
	// claimsSynced and volumesSynced: when each key was last synced, so a
	// resync skips what was just looked at.
	claimsSynced, volumesSynced *loop.Recent
	// unsettledClaims and unsettledVolumes: the keys whose object was last
	// seen not at rest (binding.ClaimAtRest, VolumeAtRest), all a resync
	// looks at.
	unsettledClaims, unsettledVolumes *loop.Unsettled
}

// New builds a binder over the given informers.
func New(cfg Config) (*Controller, error) {
	if cfg.Client == nil || cfg.Informers == nil || cfg.Recorder == nil {
		return nil, errors.New("binder: Client, Informers and Recorder are required")
	}
	cfg.Workers, cfg.ResyncPeriod = loop.WithDefaults(cfg.Workers, cfg.ResyncPeriod)
	if cfg.RecyclerNamespace == "" {
		cfg.RecyclerNamespace = "default"
	}
	if cfg.RecyclerImage == "" {
		cfg.RecyclerImage = defaultRecyclerImage
	}
	if cfg.RecycleTimeout <= 0 {
		cfg.RecycleTimeout = DefaultRecycleTimeout
	}
	if cfg.Metrics == nil {
		cfg.Metrics = prometheus.NewRegistry()
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	c := &Controller{
		client: cfg.Client, recorder: cfg.Recorder, clock: cfg.Clock, workers: cfg.Workers, resync: cfg.ResyncPeriod,
		recycleNamespace: cfg.RecyclerNamespace, recycleImage: cfg.RecyclerImage, recycleTimeout: cfg.RecycleTimeout,
		claimQ:           loop.NewQueue("binder-claims", 5*time.Millisecond, 30*time.Second),
		volumeQ:          loop.NewQueue("binder-volumes", 5*time.Millisecond, 30*time.Second),
		pvLocks:          keyedmutex.New(),
		newPV:            loop.NewNewest[*v1.PersistentVolume](),
		newClaim:         loop.NewNewest[*v1.PersistentVolumeClaim](),
		events:           loop.NewEventMemory(),
		index:            index.New(),
		waiting:          index.NewWaiting(),
		tallies:          index.NewTallies(),
		claimsSynced:     loop.NewRecent(),
		volumesSynced:    loop.NewRecent(),
		unsettledClaims:  loop.NewUnsettled(),
		unsettledVolumes: loop.NewUnsettled(),
	}
	if err := c.registerInformers(cfg.Informers); err != nil {
		return nil, err
	}
	// Conflicts are harmless and frequent across thousands of binds: retry them
	// fast, per key, with no global cap.
	c.runner = &loop.Runner{Name: "Binder", Synced: c.synced, Workers: c.workers,
		Queues: []loop.Queue{{Q: c.claimQ, Sync: c.syncClaim, Recent: c.claimsSynced},
			{Q: c.volumeQ, Sync: c.syncVolume, Recent: c.volumesSynced}},
		Resync: c.resyncUnsettled, ResyncPeriod: c.resync, Metrics: cfg.Metrics, Clock: cfg.Clock}
	m, err := newMetrics(cfg.Metrics, c.pvs, c.claims)
	if err != nil {
		return nil, fmt.Errorf("binder: register metrics: %w", err)
	}
	c.metrics = m
	c.ops = newOperations(m, cfg.Clock)
	return c, nil
}

// Run starts the workers once the caches are synced and blocks until ctx is
// done. The informer factory must be started by the caller after New.
func (c *Controller) Run(ctx context.Context) error { return c.runner.Run(ctx) }

// Ready reports whether the caches are synced and the workers run.
func (c *Controller) Ready() bool { return c.runner.Ready() }
