package attachdetach

import (
	"context"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/volplane/volplane/internal/attachment"
	"github.com/volplane/volplane/internal/controller/loop"
	"github.com/volplane/volplane/internal/informerindex"
)

// Controller is the attachdetach loop. Build it with New and start it with
// Run.
type Controller struct {
	client            kubernetes.Interface
	recorder          record.EventRecorder
	clock             clock.PassiveClock
	maxWaitForUnmount time.Duration

	pods    cache.Indexer
	vas     cache.Indexer
	pvIndex cache.Indexer
	nodes   corelisters.NodeLister
	claims  corelisters.PersistentVolumeClaimLister
	pvs     corelisters.PersistentVolumeLister
	drivers storagelisters.CSIDriverLister

	q       workqueue.TypedRateLimitingInterface[string]
	runner  *loop.Runner
	metrics *metrics
	// newestNode holds our status patches until the informer shows them,
	// so a sync right after one does not patch the same list again.
	newestNode *loop.Newest[*v1.Node]

	// mu guards the per-node memory: the unmount timers, the events
	// already recorded, the volumesInUse of deleted nodes, when each
	// node's status was last patched, and what each node's next sync is
	// to decide on (pending).
	mu     sync.Mutex
	timers map[string]map[string]time.Time
	// reported are the keys of the events recorded, with their volumes.
	reported  map[string]map[string]v1.UniqueVolumeName
	pending   map[string]*pending
	lastInUse map[string][]v1.UniqueVolumeName
	// pace is, per node, when its volumesAttached was last patched and
	// how busy its reports have been (attachment.StatusPace).
	pace           map[string]attachment.StatusPace
	statusInterval time.Duration
	// inFlight holds the attachments we created or deleted that the
	// informer does not show so yet: a sync in between must not write
	// them again.
	inFlight map[string]write
	// exclusive holds, per single-node volume (by unique volume name), the
	// node whose attachment of it is being created: two nodes' syncs run in
	// parallel, and neither sees the other's attachment in the cache before
	// its create returns.
	exclusive map[v1.UniqueVolumeName]reservation
	// inTreeMu is held by a sync whose node's pods use in-tree volumes
	// (iscsi, fc) from reading which other nodes report them until its
	// status patch is made. Such a volume is attached by being listed in
	// volumesAttached, with no attachment to reserve, so two nodes' syncs
	// deciding at once could both list a single-node volume; under the
	// lock, each sees the other's patch (newestNode). Such nodes are rare;
	// the reference runs one reconciler for all nodes.
	inTreeMu sync.Mutex
}

// New builds the loop over the given informers.
func New(cfg Config) (*Controller, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	f := cfg.Informers
	c := &Controller{
		client: cfg.Client, recorder: cfg.Recorder, clock: cfg.Clock, maxWaitForUnmount: cfg.MaxWaitForUnmount,
		q:      loop.NewQueue("attachdetach", retryBase, retryMax),
		timers: map[string]map[string]time.Time{}, reported: map[string]map[string]v1.UniqueVolumeName{}, pending: map[string]*pending{},
		lastInUse: map[string][]v1.UniqueVolumeName{}, pace: map[string]attachment.StatusPace{}, statusInterval: cfg.StatusInterval, inFlight: map[string]write{}, exclusive: map[v1.UniqueVolumeName]reservation{},
		newestNode: loop.NewNewest[*v1.Node](),
	}
	synced, err := c.registerInformers(f)
	if err != nil {
		return nil, fmt.Errorf("attachdetach: %w", err)
	}
	if c.metrics, err = newMetrics(cfg.Metrics); err != nil {
		return nil, fmt.Errorf("attachdetach: register metrics: %w", err)
	}
	c.runner = &loop.Runner{Name: "Attach/detach", Synced: synced, Workers: cfg.Workers,
		Queues: []loop.Queue{{Q: c.q, Sync: c.syncNode}},
		Resync: c.resync, ResyncPeriod: cfg.ResyncPeriod, Metrics: cfg.Metrics, Clock: cfg.Clock}
	return c, nil
}

// Run starts the workers once the caches are synced and blocks until ctx is
// done. The informer factory must be started by the caller after New.
func (c *Controller) Run(ctx context.Context) error { return c.runner.Run(ctx) }

// Ready reports whether the caches are synced and the workers run.
func (c *Controller) Ready() bool { return c.runner.Ready() }

func (c *Controller) registerInformers(f informers.SharedInformerFactory) ([]cache.InformerSynced, error) {
	podInf, err := informerindex.Pods(f)
	if err != nil {
		return nil, err
	}
	vaInf, err := informerindex.VolumeAttachments(f)
	if err != nil {
		return nil, err
	}
	pvInf, err := informerindex.PersistentVolumes(f)
	if err != nil {
		return nil, err
	}
	c.pods, c.vas, c.pvIndex = podInf.GetIndexer(), vaInf.GetIndexer(), pvInf.GetIndexer()
	c.nodes = f.Core().V1().Nodes().Lister()
	c.claims = f.Core().V1().PersistentVolumeClaims().Lister()
	c.pvs = f.Core().V1().PersistentVolumes().Lister()
	c.drivers = f.Storage().V1().CSIDrivers().Lister()
	funcs := func(h func(any)) cache.ResourceEventHandlerFuncs {
		return cache.ResourceEventHandlerFuncs{AddFunc: h, UpdateFunc: loop.Updated(h), DeleteFunc: h}
	}
	// Updates wake a node only when they change what its decision reads
	// (attachment.PodChanged and the others).
	return loop.Register(
		loop.Handler{Informer: podInf, Funcs: cache.ResourceEventHandlerFuncs{
			AddFunc: c.onPod, UpdateFunc: loop.UpdatedIf(attachment.PodChanged, c.onPod), DeleteFunc: c.onPod}},
		loop.Handler{Informer: vaInf, Funcs: cache.ResourceEventHandlerFuncs{
			AddFunc: c.onAttachment, UpdateFunc: c.onAttachmentUpdate, DeleteFunc: c.onAttachmentDeleted}},
		loop.Handler{Informer: f.Core().V1().Nodes().Informer(), Funcs: cache.ResourceEventHandlerFuncs{
			AddFunc: c.onNode, UpdateFunc: c.onNodeUpdate, DeleteFunc: c.onNodeDeleted}},
		loop.Handler{Informer: f.Core().V1().PersistentVolumeClaims().Informer(), Funcs: cache.ResourceEventHandlerFuncs{
			AddFunc: c.onClaim, UpdateFunc: c.onClaimUpdate, DeleteFunc: c.onClaim}},
		loop.Handler{Informer: pvInf, Funcs: cache.ResourceEventHandlerFuncs{
			AddFunc: c.onVolume, UpdateFunc: loop.UpdatedIf(attachment.VolumeChanged, c.onVolume), DeleteFunc: c.onVolume}},
		loop.Handler{Informer: f.Storage().V1().CSIDrivers().Informer(), Funcs: funcs(func(any) { c.enqueueAll() })},
	)
}
