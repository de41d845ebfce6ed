package provisioner

import (
	"context"
	"errors"
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

	snapclient "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/volplane/volplane/internal/controller/inflight"
	"github.com/volplane/volplane/internal/controller/loop"
	"github.com/volplane/volplane/internal/csi"
)

// Config is what a provisioner needs; every dependency is passed in.
type Config struct {
	// Client creates and deletes PVs and updates claims.
	Client kubernetes.Interface
	// Snapshots reads the VolumeSnapshots and contents claims restore
	// from, and writes the provisioner's finalizer on those snapshots;
	// nil refuses every restore.
	Snapshots snapclient.Interface
	// Informers must not be started yet; New registers what it needs
	// (claims, PVs, classes, VolumeAttributesClasses, nodes;
	// VolumeAttachments when a driver served attaches volumes).
	Informers informers.SharedInformerFactory
	// Pool holds the CSI endpoints of the drivers served.
	Pool *csi.Pool
	// Recorder returns the event recorder of a driver; its source should be
	// EventComponent(driver).
	Recorder func(driver string) record.EventRecorder
	// Workers is the number of claim workers and of volume workers (default loop.DefaultWorkers).
	Workers int
	// ResyncPeriod is how often objects with work left are revisited
	// (default 15s).
	ResyncPeriod time.Duration
	// AttacherFinalizer says volplane's attacher serves the same drivers
	// (both loops run in one manager): a new PV of a driver that attaches
	// is then created with the attacher's finalizer already on it, which
	// the attacher would otherwise add with a write of its own on the first
	// attach. The attacher removes it as usual once the PV is deleted and
	// no VolumeAttachment names it.
	AttacherFinalizer bool
	// NodeDeployment, if set, runs the provisioner beside one node's
	// driver (see NodeDeployment); nil serves every endpoint of Pool from
	// here.
	NodeDeployment *NodeDeployment
	// Metrics, if set, takes the loop's stuck-key metrics (loop.Runner).
	Metrics prometheus.Registerer
	// Ledger is the capacity accounting shared with the capacity loop
	// (nil: one of its own, which knows no capacity and hands nothing
	// back).
	Ledger *inflight.Ledger
	// MarkAfter is how long a claim's CreateVolume may run before the
	// claim is marked in progress (provisioning.MarkFirst): a create the
	// driver answers sooner, with a volume or a final error, costs no
	// claim write. 0 marks every claim before its create, so that no crash
	// can leak a volume (two claim writes more per provision);
	// DefaultMarkAfter is what `volplane controller` runs with.
	MarkAfter time.Duration
}

// DefaultMarkAfter is the --provisioning-mark-after default: a create
// slower than this is one whose claim write costs little beside it.
const DefaultMarkAfter = time.Second

// Controller is the provisioner. Build it with New and start it with Run.
type Controller struct {
	// The write side: the API client, the drivers' endpoints, and the
	// event recorder of each driver.
	client    kubernetes.Interface
	snapshots snapclient.Interface
	pool      *csi.Pool
	recorders map[string]record.EventRecorder

	// Settings from Config.
	workers           int
	resync            time.Duration
	attacherFinalizer bool
	markAfter         time.Duration
	// node is the node deployment (nil: off).
	node *NodeDeployment
	// ledger counts the volumes being created (Config.Ledger).
	ledger *inflight.Ledger

	// sourceMu serializes the source finalizers' protect and release.
	sourceMu sync.Mutex

	read   reads
	queues queues
	memory memories
	runner *loop.Runner
}

// reads is the read side: the informers' listers and indexes.
type reads struct {
	pvs     corelisters.PersistentVolumeLister
	claims  corelisters.PersistentVolumeClaimLister
	classes storagelisters.StorageClassLister
	nodes   corelisters.NodeLister
	vacs    storagelisters.VolumeAttributesClassLister
	// attachments indexes VolumeAttachments by PV name (informerindex);
	// nil when no driver served attaches volumes.
	attachments cache.Indexer
	synced      []cache.InformerSynced
}

// queues are the loop's work queues, each with its sync.
type queues struct {
	// claims: "namespace/name" keys, syncClaim; the resync skips those
	// still waiting.
	claims *loop.WaitingQueue
	// volumes: PV names, syncVolume; likewise.
	volumes *loop.WaitingQueue
	// orphans: the UIDs of claims that went away while a create of ours
	// for them was unsettled (memories.creates); syncOrphan cleans up.
	orphans workqueue.TypedRateLimitingInterface[string]
	// sources: data sources (sourceKey) that may be free of every claim
	// made from them; syncSource releases them.
	sources workqueue.TypedRateLimitingInterface[string]
}

// memories are what this process remembers beyond the informers' caches.
type memories struct {
	// creates: the creates whose outcome is not settled.
	creates *createMemory
	// newClaim and madePVs: the newest copies of what this loop wrote,
	// which the informers may not show yet.
	newClaim *loop.Newest[*v1.PersistentVolumeClaim]
	madePVs  *loop.Newest[*v1.PersistentVolume]
	// events: what was reported, so that a retry does not repeat it.
	events *loop.EventMemory
	// races: in node deployment, the claims raced for (nil: off).
	races *raceMemory
	// unsettledClaims and unsettledPVs: the keys last seen not at rest
	// (provisioning.ClaimAtRest, VolumeAtRest), all the resync looks at.
	unsettledClaims, unsettledPVs *loop.Unsettled
}

// New builds a provisioner over the given informers.
func New(cfg Config) (*Controller, error) {
	if cfg.Client == nil || cfg.Informers == nil || cfg.Pool == nil || cfg.Recorder == nil {
		return nil, errors.New("provisioner: Client, Informers, Pool and Recorder are required")
	}
	cfg.Workers, cfg.ResyncPeriod = loop.WithDefaults(cfg.Workers, cfg.ResyncPeriod)
	c := &Controller{
		client: cfg.Client, snapshots: cfg.Snapshots, pool: cfg.Pool, workers: cfg.Workers, resync: cfg.ResyncPeriod,
		attacherFinalizer: cfg.AttacherFinalizer, ledger: cfg.Ledger, markAfter: cfg.MarkAfter,
		recorders: map[string]record.EventRecorder{},
		queues: queues{
			claims:  loop.NewWaitingQueue("provisioner-claims", 500*time.Millisecond, 5*time.Minute),
			volumes: loop.NewWaitingQueue("provisioner-volumes", 500*time.Millisecond, 5*time.Minute),
			orphans: loop.NewQueue("provisioner-orphans", 500*time.Millisecond, 5*time.Minute),
			sources: loop.NewQueue("provisioner-sources", 500*time.Millisecond, 5*time.Minute),
		},
		memory: memories{
			creates:  newCreateMemory(),
			newClaim: loop.NewNewest[*v1.PersistentVolumeClaim](),
			madePVs:  loop.NewNewest[*v1.PersistentVolume](),
			events:   loop.NewEventMemory(),

			unsettledClaims: loop.NewUnsettled(),
			unsettledPVs:    loop.NewUnsettled(),
		},
	}
	if c.ledger == nil {
		c.ledger = inflight.New()
	}
	if n := cfg.NodeDeployment; n != nil {
		if err := n.Validate(); err != nil {
			return nil, fmt.Errorf("provisioner: %w", err)
		}
		if err := checkNodePool(cfg.Pool, n.NodeName); err != nil {
			return nil, err
		}
		c.node, c.memory.races = n, newRaceMemory(*n)
	}
	for _, d := range cfg.Pool.Drivers() {
		c.recorders[d] = cfg.Recorder(d)
	}
	if err := c.registerInformers(cfg.Informers); err != nil {
		return nil, err
	}
	// Failures here are calls to storage backends, which must not be hammered:
	// back off per key from half a second to five minutes.
	c.runner = &loop.Runner{Name: "Provisioner", Synced: c.read.synced, Workers: c.workers,
		Queues: []loop.Queue{{Q: c.queues.claims, Sync: c.syncClaim}, {Q: c.queues.volumes, Sync: c.syncVolume}, {Q: c.queues.orphans, Sync: c.syncOrphan}, {Q: c.queues.sources, Sync: c.syncSource}},
		Resync: c.resyncPending, ResyncPeriod: c.resync, Metrics: cfg.Metrics}
	return c, nil
}

// Run starts the workers once the caches are synced and blocks until ctx is
// done. The informer factory must be started by the caller after New.
func (c *Controller) Run(ctx context.Context) error {
	return c.runner.Run(ctx, "drivers", c.pool.Drivers())
}

// Ready reports whether the caches are synced and the workers run.
func (c *Controller) Ready() bool { return c.runner.Ready() }
