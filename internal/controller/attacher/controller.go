package attacher

import (
	"context"
	"fmt"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"github.com/volplane/volplane/internal/attachment"
	"github.com/volplane/volplane/internal/controller/loop"
	"github.com/volplane/volplane/internal/csi"
	"github.com/volplane/volplane/internal/informerindex"
	"github.com/volplane/volplane/internal/provisioning"
	"github.com/volplane/volplane/internal/publication"
)

// Controller is the attacher loop. Build it with New, start it with Run.
type Controller struct {
	client   kubernetes.Interface
	pool     *csi.Pool
	node     string
	timeout  time.Duration
	clock    clock.PassiveClock
	vas      storagelisters.VolumeAttachmentLister
	vaIndex  cache.Indexer
	pvs      corelisters.PersistentVolumeLister
	csiNodes storagelisters.CSINodeLister
	vaQ, pvQ workqueue.TypedRateLimitingInterface[string]
	// newestVA and newestPV hold what our own writes returned until the
	// informer catches up, so a sync never decides on an older copy.
	newestVA *loop.Newest[*storagev1.VolumeAttachment]
	newestPV *loop.Newest[*v1.PersistentVolume]
	// unsettledVAs and unsettledPVs: what was last seen with work to do,
	// all a resync looks at.
	unsettledVAs, unsettledPVs *loop.Unsettled
	// withdrawals: publications whose attachment vanished (withdraw.go).
	withdrawals withdrawals
	runner      *loop.Runner
}

// New builds the loop over the given informers.
func New(cfg Config) (*Controller, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	c := &Controller{client: cfg.Client, pool: cfg.Pool, node: cfg.NodeName, timeout: cfg.Timeout, clock: cfg.Clock,
		vaQ:      loop.NewQueue("attacher-va", cfg.RetryStart, cfg.RetryMax),
		pvQ:      loop.NewQueue("attacher-pv", cfg.RetryStart, cfg.RetryMax),
		newestVA: loop.NewNewest[*storagev1.VolumeAttachment](),
		newestPV: loop.NewNewest[*v1.PersistentVolume](), unsettledVAs: loop.NewUnsettled(), unsettledPVs: loop.NewUnsettled()}
	vaInf := cfg.Informers.Storage().V1().VolumeAttachments()
	pvInf := cfg.Informers.Core().V1().PersistentVolumes()
	nodeInf := cfg.Informers.Storage().V1().CSINodes()
	c.vas, c.pvs, c.csiNodes = vaInf.Lister(), pvInf.Lister(), nodeInf.Lister()
	indexed, err := informerindex.VolumeAttachments(cfg.Informers)
	if err != nil {
		return nil, fmt.Errorf("attacher: %w", err)
	}
	c.vaIndex = indexed.GetIndexer()
	synced, err := loop.Register(
		loop.Handler{Informer: vaInf.Informer(), Funcs: cache.ResourceEventHandlerFuncs{
			AddFunc: c.onAttachment, UpdateFunc: c.onAttachmentUpdate, DeleteFunc: c.onAttachmentDeleted}},
		loop.Handler{Informer: pvInf.Informer(), Funcs: cache.ResourceEventHandlerFuncs{
			AddFunc: c.onVolume, UpdateFunc: loop.Updated(c.onVolume), DeleteFunc: c.onVolumeDeleted}},
		loop.Handler{Informer: nodeInf.Informer(), Funcs: cache.ResourceEventHandlerFuncs{
			AddFunc: c.onCSINode, UpdateFunc: loop.Updated(c.onCSINode)}})
	if err != nil {
		return nil, fmt.Errorf("attacher: %w", err)
	}
	c.runner = &loop.Runner{Name: "Attacher", Synced: synced, Workers: cfg.Workers,
		Queues:       []loop.Queue{{Q: c.vaQ, Sync: c.syncAttachment}, {Q: c.pvQ, Sync: c.syncVolume}},
		Resync:       c.resync,
		ResyncPeriod: cfg.ResyncPeriod,
		Metrics:      cfg.Metrics, Clock: cfg.Clock}
	return c, nil
}

// Run starts the workers once the caches are synced and blocks until ctx
// is done. The informer factory must be started by the caller after New.
func (c *Controller) Run(ctx context.Context) error {
	return c.runner.Run(ctx, "drivers", c.pool.Drivers(), "node", c.node)
}

// Ready reports whether the caches are synced and the workers run.
func (c *Controller) Ready() bool { return c.runner.Ready() }

// ours says whether the attachment is for a driver of the pool and, in
// node deployment, for this node: another node's attachment is its own
// loop's, whose driver is the one that can attach there.
func (c *Controller) ours(va *storagev1.VolumeAttachment) bool {
	return c.pool.Serves(va.Spec.Attacher) && (c.node == "" || va.Spec.NodeName == c.node)
}

func (c *Controller) onAttachment(obj any) {
	if va, ok := obj.(*storagev1.VolumeAttachment); ok && c.ours(va) {
		c.unsettledVAs.Saw(va.Name, !restless(va))
		c.vaQ.Add(va.Name)
	}
}

// restless says whether the attachment still has work: not attached, or
// being deleted with the driver's finalizer on.
func restless(va *storagev1.VolumeAttachment) bool {
	if va.DeletionTimestamp != nil {
		return slices.Contains(va.Finalizers, attachment.Finalizer(va.Spec.Attacher))
	}
	return !va.Status.Attached
}

// onAttachmentUpdate ignores our own error reports (see
// publication.OnlyErrorsChanged): they would undo the backoff.
func (c *Controller) onAttachmentUpdate(old, cur any) {
	o, okO := old.(*storagev1.VolumeAttachment)
	n, okN := cur.(*storagev1.VolumeAttachment)
	if !okO || !okN || !c.ours(n) {
		return
	}
	c.unsettledVAs.Saw(n.Name, !restless(n))
	if publication.OnlyErrorsChanged(o, n) {
		return
	}
	c.vaQ.Add(n.Name)
}

// onAttachmentDeleted lets the PV the attachment named lose its finalizer.
func (c *Controller) onAttachmentDeleted(obj any) {
	va, ok := loop.As[*storagev1.VolumeAttachment](obj)
	if !ok {
		return
	}
	c.newestVA.Forget(va.Name)
	c.unsettledVAs.Gone(va.Name)
	if name := va.Spec.Source.PersistentVolumeName; name != nil && c.ours(va) {
		c.pvQ.Add(*name)
	}
}

// onVolume queues a PV carrying one of our finalizers that is being
// deleted, or that is an in-tree PV not claimed by migration to our driver
// (publication.Unclaimed): its finalizer may go.
func (c *Controller) onVolume(obj any) {
	pv, ok := obj.(*v1.PersistentVolume)
	if !ok {
		return
	}
	pv = c.newestPV.Observe(pv.Name, pv)
	d := c.volumeDriver(pv)
	work := d != "" && (pv.DeletionTimestamp != nil || publication.Unclaimed(pv, d))
	c.unsettledPVs.Saw(pv.Name, !work)
	if work {
		c.pvQ.Add(pv.Name)
	}
}

func (c *Controller) onVolumeDeleted(obj any) {
	if pv, ok := loop.As[*v1.PersistentVolume](obj); ok {
		c.newestPV.Forget(pv.Name)
		c.unsettledPVs.Gone(pv.Name)
	}
}

// volumeDriver is the served driver whose finalizer the PV carries, or "".
// In node deployment that is only for a PV this node's driver holds (its
// node affinity admits the node): a node-local volume's attachments are
// all its node's, and no other node may write the PV.
func (c *Controller) volumeDriver(pv *v1.PersistentVolume) string {
	if c.node != "" && !c.holds(pv) {
		return ""
	}
	for _, d := range c.pool.Drivers() {
		if slices.Contains(pv.Finalizers, attachment.Finalizer(d)) {
			return d
		}
	}
	return ""
}

// holds says whether this node's driver holds pv's volume
// (provisioning.ForVolume, with the driver's segment); a migrated in-tree
// PV as its driver sees it.
func (c *Controller) holds(pv *v1.PersistentVolume) bool {
	if pv = asCSI(pv); pv.Spec.CSI == nil {
		return false
	}
	info, ok := c.pool.Info(pv.Spec.CSI.Driver)
	return ok && provisioning.ForVolume(provisioning.Local{Node: c.node, Topology: info.Topology}, pv).Ours
}

// onCSINode wakes the node's attachments not attached yet: a driver that
// registers there gives them the node ID they wait for.
func (c *Controller) onCSINode(obj any) {
	n, ok := obj.(*storagev1.CSINode)
	if !ok || (c.node != "" && n.Name != c.node) {
		return
	}
	vas, _ := informerindex.AttachmentsOn(c.vaIndex, n.Name)
	for _, va := range vas {
		if c.ours(va) && !va.Status.Attached && va.DeletionTimestamp == nil {
			c.vaQ.Add(va.Name)
		}
	}
}

// resync revisits what was last seen not at rest (the handlers keep the
// sets: restless attachments of ours, PVs whose finalizer may go), leaving
// alone the keys waiting out a backoff (adding them would retry at once).
func (c *Controller) resync(context.Context) {
	for _, name := range c.unsettledVAs.Keys() {
		if c.vaQ.NumRequeues(name) == 0 {
			c.vaQ.Add(name)
		}
	}
	for _, name := range c.unsettledPVs.Keys() {
		if c.pvQ.NumRequeues(name) == 0 {
			c.pvQ.Add(name)
		}
	}
}
