package snapshotter

import (
	"context"
	"fmt"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	snaplisters "github.com/kubernetes-csi/external-snapshotter/client/v8/listers/volumesnapshot/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/volplane/volplane/internal/controller/loop"
	"github.com/volplane/volplane/internal/informerindex"
	"github.com/volplane/volplane/internal/snapshotting"
)

// Controller is the snapshotter loop. Build it with New, start it with Run.
type Controller struct {
	cfg      Config
	contents snaplisters.VolumeSnapshotContentLister
	classes  snaplisters.VolumeSnapshotClassLister
	pvs      cache.Indexer
	q        workqueue.TypedRateLimitingInterface[string]
	newest   *loop.Newest[*snapv1.VolumeSnapshotContent]
	waits    *loop.Waits
	// unsettled: the contents last seen not at rest, whatever their
	// driver (one not served yet may be later); the resync's set.
	unsettled *loop.Unsettled
	runner    *loop.Runner
}

// New builds the loop over the given informers.
func New(cfg Config) (*Controller, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	c := &Controller{cfg: cfg, q: loop.NewQueue("csi-snapshotter-content", cfg.RetryStart, cfg.RetryMax),
		newest: loop.NewNewest[*snapv1.VolumeSnapshotContent](), waits: &loop.Waits{}, unsettled: loop.NewUnsettled()}
	contentInf := cfg.SnapshotInformers.Snapshot().V1().VolumeSnapshotContents()
	classInf := cfg.SnapshotInformers.Snapshot().V1().VolumeSnapshotClasses()
	pvInf, err := informerindex.PersistentVolumes(cfg.Informers)
	if err != nil {
		return nil, fmt.Errorf("snapshotter: %w", err)
	}
	c.contents, c.classes, c.pvs = contentInf.Lister(), classInf.Lister(), pvInf.GetIndexer()
	synced, err := loop.Register(loop.Handler{Informer: contentInf.Informer(), Funcs: cache.ResourceEventHandlerFuncs{
		AddFunc: c.onContent, UpdateFunc: c.onContentUpdate, DeleteFunc: c.onContentGone}})
	if err != nil {
		return nil, fmt.Errorf("snapshotter: %w", err)
	}
	// Classes and PVs are only read: a content whose class or PV is not
	// cached yet fails and is retried.
	synced = append(synced, classInf.Informer().HasSynced, pvInf.HasSynced)
	c.runner = &loop.Runner{Name: "Snapshotter", Synced: synced, Workers: cfg.Workers,
		Queues: []loop.Queue{{Q: c.q, Sync: c.sync}}, Resync: c.resync, ResyncPeriod: cfg.ResyncPeriod, Metrics: cfg.Metrics}
	return c, nil
}

// Run starts the workers once the caches are synced and blocks until ctx
// is done. The informer factories must be started by the caller after New.
func (c *Controller) Run(ctx context.Context) error {
	return c.runner.Run(ctx, "drivers", c.drivers(), "node", c.cfg.NodeName)
}

// Drivers are the drivers the loop serves: those of the pool that take
// snapshots (its heartbeat beats for them).
func (c *Controller) Drivers() []string { return c.drivers() }

// Ready reports whether the caches are synced and the workers run.
func (c *Controller) Ready() bool { return c.runner.Ready() }

// drivers are the served drivers that take snapshots.
func (c *Controller) drivers() []string {
	var out []string
	for _, d := range c.cfg.Pool.Drivers() {
		if c.serves(d) {
			out = append(out, d)
		}
	}
	return out
}

func (c *Controller) serves(driver string) bool {
	info, ok := c.cfg.Pool.Info(driver)
	return ok && info.Snapshot
}

// wanted says whether the content may be this process's: its driver is
// served and no label gives it to another node.
func (c *Controller) wanted(content *snapv1.VolumeSnapshotContent) bool {
	return c.serves(content.Spec.Driver) && snapshotting.ServedBy(content, c.cfg.NodeName) != snapshotting.ServeNo
}

func (c *Controller) onContent(obj any) {
	content, ok := obj.(*snapv1.VolumeSnapshotContent)
	if !ok {
		return
	}
	c.unsettled.Saw(content.Name, atRest(content))
	if c.wanted(content) {
		c.newest.Observe(content.Name, content)
		c.q.Add(content.Name)
	}
}

// atRest: ready, not being created, not being deleted: nothing for the
// loop to do until someone changes it.
func atRest(content *snapv1.VolumeSnapshotContent) bool {
	return snapshotting.Ready(content) && !snapshotting.Creating(content) && content.DeletionTimestamp == nil
}

// onContentUpdate queues every change but our own last write, whose sync
// already decided what follows (it returned Again or After): no change
// made by anyone else is filtered, so a deletion or an annotation arriving
// while a CreateSnapshot runs is never missed (external-snapshotter#1388).
func (c *Controller) onContentUpdate(_, cur any) {
	content, ok := cur.(*snapv1.VolumeSnapshotContent)
	if !ok {
		return
	}
	c.unsettled.Saw(content.Name, atRest(content))
	if !c.wanted(content) {
		return
	}
	if c.newest.IsOwnWrite(content.Name, content) {
		c.newest.Observe(content.Name, content)
		return
	}
	c.newest.Observe(content.Name, content)
	c.q.Add(content.Name)
}

func (c *Controller) onContentGone(obj any) {
	if content, ok := loop.As[*snapv1.VolumeSnapshotContent](obj); ok {
		c.newest.Forget(content.Name)
		c.waits.Done(content.Name)
		c.unsettled.Gone(content.Name)
	}
}

// resync queues every content last seen not at rest (not ready, being
// created, or being deleted: the handlers keep the set, so a pass costs
// those, not every content) that is not already waiting out a backoff: a
// failing driver is asked again at the backoff's pace, not the resync's.
func (c *Controller) resync(context.Context) {
	for _, name := range c.unsettled.Keys() {
		if c.q.NumRequeues(name) > 0 || c.waits.Waiting(name) {
			continue
		}
		if content, err := c.contents.Get(name); err == nil && c.wanted(content) && !atRest(content) {
			c.q.Add(name)
		}
	}
}
