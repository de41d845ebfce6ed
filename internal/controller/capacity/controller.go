package capacity

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"

	capacitycore "github.com/volplane/volplane/internal/capacity"
	"github.com/volplane/volplane/internal/controller/inflight"
	"github.com/volplane/volplane/internal/controller/loop"
	"github.com/volplane/volplane/internal/csi"
	"github.com/volplane/volplane/internal/informerindex"
)

// DefaultPollInterval is the reference's --capacity-poll-interval.
const DefaultPollInterval = time.Minute

// Config is what the capacity loop needs.
type Config struct {
	// Client writes the CSIStorageCapacity objects and lists them in
	// Namespace.
	Client kubernetes.Interface
	// Informers is the shared factory (Nodes, CSINodes, StorageClasses);
	// not started yet.
	Informers informers.SharedInformerFactory
	// Pool holds the drivers; those with GET_CAPACITY are served.
	Pool *csi.Pool
	// Ledger is the accounting shared with the provisioner.
	Ledger *inflight.Ledger
	// Namespace holds the objects (the reference's $NAMESPACE).
	Namespace string
	// Owner, if set, is every object's controller; nil: OwnerPod's, else
	// no owner.
	Owner *metav1.OwnerReference
	// OwnerPod, "namespace/name" of the pod this loop runs in (the
	// reference's POD_NAME and NAMESPACE), with OwnerLevels (its
	// --capacity-ownerref-level), finds the owner when Run starts
	// (OwnerOf). The pod must be in Namespace: an owner reference never
	// crosses namespaces.
	OwnerPod    string
	OwnerLevels int
	// NodeName, if set, is node deployment: only that node's segment.
	NodeName string
	// Immediate also publishes for Immediate classes
	// (--capacity-for-immediate-binding).
	Immediate bool
	// PollInterval: every answer is asked again this often
	// (DefaultPollInterval when zero).
	PollInterval time.Duration
	Metrics      prometheus.Registerer
}

// Controller is the capacity loop.
type Controller struct {
	cfg      Config
	managed  string
	drivers  []string
	queue    workqueue.TypedRateLimitingInterface[string]
	runner   *loop.Runner
	objects  informers.SharedInformerFactory
	nodes    corelisters.NodeLister
	csiNodes storagelisters.CSINodeLister
	classes  storagelisters.StorageClassLister
	list     storagelisters.CSIStorageCapacityLister
	bySeg    cache.Indexer // the objects, indexed by work key (segmentIndex)
	written  *loop.Newest[*storagev1.CSIStorageCapacity]

	mu       sync.Mutex
	dirty    map[string]map[string]bool // driver → segment keys
	lastPoll map[string]time.Time
	// created are the objects created and not listed yet, by work key
	// (segmentKey) and name.
	created map[string]map[string]*storagev1.CSIStorageCapacity
	// members are the drivers' segments, kept from the Node and CSINode
	// events (not in node deployment).
	members capacitycore.Membership
}

// segmentKey is the work key of one segment of a driver. A driver's name
// (no "/" in it) is the key of a sync over all its segments: the poll, a
// class's change.
func segmentKey(driver, segment string) string { return capacitycore.DriverSegmentKey(driver, segment) }

// objectKey is the work key of the segment an object publishes for.
func objectKey(o *storagev1.CSIStorageCapacity) (string, bool) { return capacitycore.ObjectKey(o) }

// New builds the loop; it registers its informers on cfg.Informers.
func New(cfg Config) (*Controller, error) {
	if cfg.Client == nil || cfg.Informers == nil || cfg.Pool == nil || cfg.Ledger == nil || cfg.Namespace == "" {
		return nil, errors.New("capacity: Client, Informers, Pool, Ledger and Namespace are required")
	}
	if ns, _, _ := strings.Cut(cfg.OwnerPod, "/"); cfg.OwnerPod != "" && ns != cfg.Namespace {
		return nil, fmt.Errorf("capacity: the owner's pod %s is not in the objects' namespace %s", cfg.OwnerPod, cfg.Namespace)
	}
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	c := &Controller{
		cfg: cfg, managed: capacitycore.ManagedBy(cfg.NodeName),
		queue:   loop.NewQueue("capacity", loop.DefaultRetryStart, loop.DefaultRetryMax),
		written: loop.NewNewest[*storagev1.CSIStorageCapacity](),
		dirty:   map[string]map[string]bool{}, lastPoll: map[string]time.Time{},
		created: map[string]map[string]*storagev1.CSIStorageCapacity{},
	}
	for _, d := range cfg.Pool.Drivers() {
		if hasGetCapacity(cfg.Pool.Endpoints(d)) {
			c.drivers = append(c.drivers, d)
		}
	}
	// The reference watches only its namespace and its own labels.
	c.objects = informers.NewSharedInformerFactoryWithOptions(cfg.Client, 0,
		informers.WithNamespace(cfg.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.LabelSelector = labels.Set{capacitycore.ManagedByLabel: c.managed}.AsSelector().String()
		}))
	synced, err := c.register()
	if err != nil {
		return nil, err
	}
	cfg.Ledger.Subscribe(c.onLedger)
	c.runner = &loop.Runner{Name: "Capacity", Synced: synced, Workers: 1,
		Queues: []loop.Queue{{Q: c.queue, Sync: c.sync}},
		Resync: c.enqueueAll, ResyncPeriod: cfg.PollInterval, Metrics: cfg.Metrics}
	return c, nil
}

func hasGetCapacity(eps []*csi.Endpoint) bool {
	for _, e := range eps {
		if e.Info.Controller && e.Info.GetCapacity {
			return true
		}
	}
	return false
}

// register adds the handlers. A class's change queues every driver (all
// its segments); a Node's or CSINode's, only the segments that appeared or
// went away by it; an object's, its own segment. So 1,000 nodes joining
// cost 1,000 syncs of one segment each, not 1,000 syncs of every segment.
func (c *Controller) register() ([]cache.InformerSynced, error) {
	all := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.enqueueAll(context.Background()) },
		UpdateFunc: loop.Updated(func(any) { c.enqueueAll(context.Background()) }),
		DeleteFunc: func(any) { c.enqueueAll(context.Background()) },
	}
	classes := c.cfg.Informers.Storage().V1().StorageClasses()
	objects := c.objects.Storage().V1().CSIStorageCapacities()
	c.classes, c.list = classes.Lister(), objects.Lister()
	inf, err := informerindex.CSIStorageCapacities(c.objects)
	if err != nil {
		return nil, err
	}
	c.bySeg = inf.GetIndexer()
	// An object's event of the version this loop wrote wakes nothing: the
	// sync that wrote it decided with it already.
	ours := func(obj any) {
		o, ok := obj.(*storagev1.CSIStorageCapacity)
		if ok {
			own := c.written.IsOwnWrite(o.Name, o)
			c.written.Observe(o.Name, o)
			if own {
				return
			}
		}
		c.enqueueObject(obj)
	}
	objectFuncs := cache.ResourceEventHandlerFuncs{AddFunc: ours, UpdateFunc: loop.Updated(ours), DeleteFunc: c.enqueueObject}
	handlers := []loop.Handler{{Informer: classes.Informer(), Funcs: all}, {Informer: objects.Informer(), Funcs: objectFuncs}}
	if c.cfg.NodeName == "" {
		nodes := c.cfg.Informers.Core().V1().Nodes()
		csiNodes := c.cfg.Informers.Storage().V1().CSINodes()
		c.nodes, c.csiNodes = nodes.Lister(), csiNodes.Lister()
		handlers = append(handlers,
			loop.Handler{Informer: nodes.Informer(), Funcs: cache.ResourceEventHandlerFuncs{
				AddFunc: c.nodeEvent, DeleteFunc: c.nodeEvent,
				UpdateFunc: loop.UpdatedIf(capacitycore.NodeChanged, c.nodeEvent),
			}},
			loop.Handler{Informer: csiNodes.Informer(), Funcs: cache.ResourceEventHandlerFuncs{
				AddFunc: c.nodeEvent, DeleteFunc: c.nodeEvent,
				UpdateFunc: loop.UpdatedIf(capacitycore.CSINodeChanged, c.nodeEvent),
			}})
	}
	return loop.Register(handlers...)
}

// nodeEvent records the segments of the node a Node's or CSINode's event
// names, read from both caches (each handler sees the caches after its own
// event, so the handler of the last event records the final state), and
// queues the segments that appeared or went away.
func (c *Controller) nodeEvent(obj any) {
	name, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return
	}
	var keys []string
	c.mu.Lock()
	node, _ := c.nodes.Get(name)
	csiNode, _ := c.csiNodes.Get(name)
	for _, d := range c.drivers {
		seg, ok := capacitycore.NodeSegment(d, csiNode, node)
		for _, k := range c.members.Set(d, name, seg, ok) {
			keys = append(keys, segmentKey(d, k))
		}
	}
	c.mu.Unlock()
	for _, k := range keys {
		c.queue.Add(k)
	}
}

// enqueueObject queues the segment of an object of a served driver (every
// driver for an object whose nodeTopology is not plain matchLabels: only
// a sync of all segments deletes it).
func (c *Controller) enqueueObject(obj any) {
	o, ok := loop.As[*storagev1.CSIStorageCapacity](obj)
	if !ok {
		c.enqueueAll(context.Background())
		return
	}
	k, ok := objectKey(o)
	if !ok {
		c.enqueueAll(context.Background())
		return
	}
	if slices.Contains(c.drivers, o.Labels[capacitycore.DriverNameLabel]) {
		c.queue.Add(k)
	}
}

// Run starts the objects' own informer and the worker; it blocks until ctx
// is done.
func (c *Controller) Run(ctx context.Context) error {
	if ns, pod, _ := strings.Cut(c.cfg.OwnerPod, "/"); c.cfg.Owner == nil && pod != "" {
		owner, err := OwnerOf(ctx, c.cfg.Client, ns, pod, c.cfg.OwnerLevels)
		if ctx.Err() != nil {
			return nil // stopped while starting: a normal shutdown
		}
		if err != nil {
			return err
		}
		c.cfg.Owner = owner
		klog.FromContext(ctx).Info("Owner of the CSIStorageCapacity objects", "kind", owner.Kind, "name", owner.Name)
	}
	c.objects.Start(ctx.Done())
	defer c.objects.Shutdown()
	return c.runner.Run(ctx, "drivers", c.drivers, "namespace", c.cfg.Namespace)
}

// Ready reports whether the caches are synced and the worker runs.
func (c *Controller) Ready() bool { return c.runner.Ready() }

func (c *Controller) enqueueAll(context.Context) {
	for _, d := range c.drivers {
		c.queue.Add(d)
	}
}

// onLedger hears the provisioner: a volume reserved, made or deleted on a
// segment; made or deleted makes the segment's answers stale.
func (c *Controller) onLedger(driver, segment string, refresh bool) {
	if refresh {
		c.mu.Lock()
		if c.dirty[driver] == nil {
			c.dirty[driver] = map[string]bool{}
		}
		c.dirty[driver][segment] = true
		c.mu.Unlock()
	}
	c.queue.Add(segmentKey(driver, segment))
}

// stale takes the driver's stale segments; all says every answer is (the
// poll is due).
func (c *Controller) stale(driver string, now time.Time) (segments map[string]bool, all bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	segments = c.dirty[driver]
	delete(c.dirty, driver)
	if last, ok := c.lastPoll[driver]; !ok || now.Sub(last) >= c.cfg.PollInterval {
		c.lastPoll[driver] = now
		all = true
	}
	return segments, all
}

// staleSegment takes whether one segment of driver is stale (the poll is
// left to the sync of all segments).
func (c *Controller) staleSegment(driver, segment string) map[string]bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.dirty[driver][segment] {
		return nil
	}
	delete(c.dirty[driver], segment)
	return map[string]bool{segment: true}
}

// staleAgain puts back segments whose question failed.
func (c *Controller) staleAgain(driver string, segments []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dirty[driver] == nil {
		c.dirty[driver] = map[string]bool{}
	}
	for _, s := range segments {
		c.dirty[driver][s] = true
	}
}
