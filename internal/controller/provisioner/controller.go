package provisioner

import (
	"context"
	"errors"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/volplane/volplane/internal/controller/loop"
	"github.com/volplane/volplane/internal/csi"
)

// Config is what a provisioner needs; every dependency is passed in.
type Config struct {
	// Client creates and deletes PVs and updates claims.
	Client kubernetes.Interface
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
}

// Controller is the provisioner. Build it with New and start it with Run.
type Controller struct {
	client    kubernetes.Interface
	pool      *csi.Pool
	recorders map[string]record.EventRecorder
	workers   int
	resync    time.Duration
	// attacherFinalizer: Config.AttacherFinalizer.
	attacherFinalizer bool
	// node is the node deployment (nil: off); races its memory.
	node  *NodeDeployment
	races *raceMemory

	pvs     corelisters.PersistentVolumeLister
	claims  corelisters.PersistentVolumeClaimLister
	classes storagelisters.StorageClassLister
	nodes   corelisters.NodeLister
	vacs    storagelisters.VolumeAttributesClassLister
	// attachments indexes VolumeAttachments by PV name; nil when no
	// driver served attaches volumes.
	attachments cache.Indexer
	synced      []cache.InformerSynced

	claimQ  workqueue.TypedRateLimitingInterface[string]
	volumeQ workqueue.TypedRateLimitingInterface[string]
	// orphanQ holds the UIDs of claims that went away while a create of
	// ours for them was unsettled (creates); syncOrphan cleans up.
	orphanQ  workqueue.TypedRateLimitingInterface[string]
	creates  *createMemory
	newClaim *loop.Newest[*v1.PersistentVolumeClaim]
	madePVs  *loop.Newest[*v1.PersistentVolume]
	events   *eventMemory
	runner   *loop.Runner
}

// New builds a provisioner over the given informers.
func New(cfg Config) (*Controller, error) {
	if cfg.Client == nil || cfg.Informers == nil || cfg.Pool == nil || cfg.Recorder == nil {
		return nil, errors.New("provisioner: Client, Informers, Pool and Recorder are required")
	}
	cfg.Workers, cfg.ResyncPeriod = loop.WithDefaults(cfg.Workers, cfg.ResyncPeriod)
	c := &Controller{
		client: cfg.Client, pool: cfg.Pool, workers: cfg.Workers, resync: cfg.ResyncPeriod,
		attacherFinalizer: cfg.AttacherFinalizer,
		recorders:         map[string]record.EventRecorder{},
		claimQ:            loop.NewQueue("provisioner-claims", 500*time.Millisecond, 5*time.Minute),
		volumeQ:           loop.NewQueue("provisioner-volumes", 500*time.Millisecond, 5*time.Minute),
		orphanQ:           loop.NewQueue("provisioner-orphans", 500*time.Millisecond, 5*time.Minute),
		creates:           newCreateMemory(),
		newClaim:          loop.NewNewest[*v1.PersistentVolumeClaim](),
		madePVs:           loop.NewNewest[*v1.PersistentVolume](),
		events:            newEventMemory(),
	}
	if n := cfg.NodeDeployment; n != nil {
		if err := n.Validate(); err != nil {
			return nil, fmt.Errorf("provisioner: %w", err)
		}
		if err := checkNodePool(cfg.Pool, n.NodeName); err != nil {
			return nil, err
		}
		c.node, c.races = n, newRaceMemory(*n)
	}
	for _, d := range cfg.Pool.Drivers() {
		c.recorders[d] = cfg.Recorder(d)
	}
	if err := c.registerInformers(cfg.Informers); err != nil {
		return nil, err
	}
	// Failures here are calls to storage backends, which must not be hammered:
	// back off per key from half a second to five minutes.
	c.runner = &loop.Runner{Name: "Provisioner", Synced: c.synced, Workers: c.workers,
		Queues: []loop.Queue{{Q: c.claimQ, Sync: loop.ErrorOnly(c.syncClaim)}, {Q: c.volumeQ, Sync: loop.ErrorOnly(c.syncVolume)}, {Q: c.orphanQ, Sync: loop.ErrorOnly(c.syncOrphan)}},
		Resync: c.resyncPending, ResyncPeriod: c.resync}
	return c, nil
}

// Run starts the workers once the caches are synced and blocks until ctx is
// done. The informer factory must be started by the caller after New.
func (c *Controller) Run(ctx context.Context) error {
	return c.runner.Run(ctx, "drivers", c.pool.Drivers())
}

// Ready reports whether the caches are synced and the workers run.
func (c *Controller) Ready() bool { return c.runner.Ready() }
