package groupsnapshot

import (
	"context"
	"fmt"
	"time"

	vgsv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	snapclient "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	vgslisters "github.com/kubernetes-csi/external-snapshotter/client/v8/listers/volumegroupsnapshot/v1"
	snaplisters "github.com/kubernetes-csi/external-snapshotter/client/v8/listers/volumesnapshot/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/volplane/volplane/internal/controller/loop"
	"github.com/volplane/volplane/internal/grouping"
	"github.com/volplane/volplane/internal/snapshotapi"
)

// Controller is the snapshot-controller's half. Build it with
// NewController, start it with Run.
type Controller struct {
	snaps     snapclient.Interface
	recorder  record.EventRecorder
	now       func() time.Time
	groups    vgslisters.VolumeGroupSnapshotLister
	contents  vgslisters.VolumeGroupSnapshotContentLister
	classes   vgslisters.VolumeGroupSnapshotClassLister
	snapshots snaplisters.VolumeSnapshotLister
	vscs      snaplisters.VolumeSnapshotContentLister
	claims    corelisters.PersistentVolumeClaimLister
	pvs       corelisters.PersistentVolumeLister
	groupQ    workqueue.TypedRateLimitingInterface[string]
	contentQ  workqueue.TypedRateLimitingInterface[string]
	runner    *loop.Runner
	// The copies our writes returned, until the informers deliver them
	// (see own.go): syncs decide from them, and their events wake nothing.
	own ownWrites
	// bypassed holds the UIDs of groups seen deleted past their finalizer
	// (grouping.GroupSkippedFinalizer) until their content is gone.
	bypassed *loop.UIDSet
}

// NewController builds the half over the given informers.
func NewController(cfg Config) (*Controller, error) {
	cfg, err := cfg.withDefaults(false)
	if err != nil {
		return nil, err
	}
	c := &Controller{snaps: cfg.Snapshots, recorder: cfg.Recorder, now: cfg.Now,
		groupQ:   loop.NewQueue("groupsnapshot", cfg.RetryStart, cfg.RetryMax),
		contentQ: loop.NewQueue("groupsnapshotcontent", cfg.RetryStart, cfg.RetryMax), own: newOwnWrites(), bypassed: loop.NewUIDSet()}
	gi := cfg.SnapshotInformers.Groupsnapshot().V1()
	si := cfg.SnapshotInformers.Snapshot().V1()
	ci := cfg.Informers.Core().V1()
	c.groups, c.contents, c.classes = gi.VolumeGroupSnapshots().Lister(), gi.VolumeGroupSnapshotContents().Lister(), gi.VolumeGroupSnapshotClasses().Lister()
	c.snapshots, c.vscs = si.VolumeSnapshots().Lister(), si.VolumeSnapshotContents().Lister()
	c.claims, c.pvs = ci.PersistentVolumeClaims().Lister(), ci.PersistentVolumes().Lister()
	synced, err := loop.Register(
		loop.Handler{Informer: gi.VolumeGroupSnapshots().Informer(), Funcs: cache.ResourceEventHandlerFuncs{
			AddFunc: c.onGroup, UpdateFunc: loop.Updated(c.onGroup), DeleteFunc: c.onGroupGone}},
		loop.Handler{Informer: gi.VolumeGroupSnapshotContents().Informer(), Funcs: cache.ResourceEventHandlerFuncs{
			AddFunc: c.onContent, UpdateFunc: loop.Updated(c.onContent), DeleteFunc: c.onContentGone}},
		loop.Handler{Informer: si.VolumeSnapshots().Informer(), Funcs: cache.ResourceEventHandlerFuncs{
			AddFunc: c.onSnapshot, UpdateFunc: loop.Updated(c.onSnapshot), DeleteFunc: c.onSnapshotGone}},
		loop.Handler{Informer: si.VolumeSnapshotContents().Informer(), Funcs: cache.ResourceEventHandlerFuncs{
			AddFunc: c.onMemberContent, UpdateFunc: loop.Updated(c.onMemberContent), DeleteFunc: c.onMemberContentGone}},
	)
	if err != nil {
		return nil, fmt.Errorf("groupsnapshot: %w", err)
	}
	synced = append(synced, gi.VolumeGroupSnapshotClasses().Informer().HasSynced,
		ci.PersistentVolumeClaims().Informer().HasSynced, ci.PersistentVolumes().Informer().HasSynced)
	c.runner = &loop.Runner{Name: "GroupSnapshot", Synced: synced, Workers: cfg.Workers,
		Queues: []loop.Queue{{Q: c.groupQ, Sync: c.syncGroup}, {Q: c.contentQ, Sync: c.syncContent}},
		Resync: c.resync, ResyncPeriod: cfg.ResyncPeriod, Metrics: cfg.Metrics}
	return c, nil
}

// Run starts the workers once the caches are synced and blocks until ctx
// is done.
func (c *Controller) Run(ctx context.Context) error { return c.runner.Run(ctx) }

// Ready reports whether the caches are synced and the workers run.
func (c *Controller) Ready() bool { return c.runner.Ready() }

func tombstone(obj any) any {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return t.Obj
	}
	return obj
}

// onGroup queues the group (and its content) on every change but our own
// last write, whose sync already asked for what follows.
func (c *Controller) onGroup(obj any) {
	if g, ok := tombstone(obj).(*vgsv1.VolumeGroupSnapshot); ok && !c.own.groups.seen(grouping.GroupKey(g), g) {
		c.groupQ.Add(grouping.GroupKey(g))
		if g.Status != nil && g.Status.BoundVolumeGroupSnapshotContentName != nil {
			c.contentQ.Add(*g.Status.BoundVolumeGroupSnapshotContentName)
		}
	}
}

func (c *Controller) onGroupGone(obj any) {
	if g, ok := loop.As[*vgsv1.VolumeGroupSnapshot](obj); ok {
		c.own.groups.Forget(grouping.GroupKey(g))
		if _, final := obj.(*vgsv1.VolumeGroupSnapshot); final && grouping.GroupSkippedFinalizer(g) {
			// The watch's own delete event (a relist's tombstone may be an
			// older copy): gone past its finalizer, its content is ours to
			// deal with.
			c.bypassed.Add(g.UID)
			c.contentQ.Add(snapshotapi.GroupContentName(g.UID))
		}
		c.onGroup(g)
	}
}

func (c *Controller) onContent(obj any) {
	if gc, ok := tombstone(obj).(*vgsv1.VolumeGroupSnapshotContent); ok && !c.own.contents.seen(gc.Name, gc) {
		c.contentQ.Add(gc.Name)
		if r := gc.Spec.VolumeGroupSnapshotRef; r.Name != "" && r.Namespace != "" {
			c.groupQ.Add(grouping.Key(r.Namespace, r.Name))
		}
	}
}

func (c *Controller) onContentGone(obj any) {
	if gc, ok := loop.As[*vgsv1.VolumeGroupSnapshotContent](obj); ok {
		c.own.contents.Forget(gc.Name)
		c.bypassed.Remove(gc.Spec.VolumeGroupSnapshotRef.UID)
		c.onContent(gc)
	}
}

func (c *Controller) onSnapshot(obj any) {
	if vs, ok := tombstone(obj).(*snapv1.VolumeSnapshot); ok && !c.own.members.seen(grouping.Key(vs.Namespace, vs.Name), vs) {
		c.queueGroupOf(vs)
	}
}

func (c *Controller) onSnapshotGone(obj any) {
	if vs, ok := loop.As[*snapv1.VolumeSnapshot](obj); ok {
		c.own.members.Forget(grouping.Key(vs.Namespace, vs.Name))
		c.queueGroupOf(vs)
	}
}

func (c *Controller) queueGroupOf(vs *snapv1.VolumeSnapshot) {
	if g := grouping.GroupOf(vs); g != "" {
		c.groupQ.Add(grouping.Key(vs.Namespace, g))
	}
}

// onMemberContent queues the group of a member content: through the
// snapshot its ref names.
func (c *Controller) onMemberContent(obj any) {
	vsc, ok := tombstone(obj).(*snapv1.VolumeSnapshotContent)
	if !ok || vsc.Annotations[snapshotapi.GroupHandleAnnotation] == "" || c.own.memberContents.seen(vsc.Name, vsc) {
		return
	}
	c.queueGroupOfContent(vsc)
}

func (c *Controller) onMemberContentGone(obj any) {
	if vsc, ok := loop.As[*snapv1.VolumeSnapshotContent](obj); ok {
		c.own.memberContents.Forget(vsc.Name)
		if vsc.Annotations[snapshotapi.GroupHandleAnnotation] != "" {
			c.queueGroupOfContent(vsc)
		}
	}
}

func (c *Controller) queueGroupOfContent(vsc *snapv1.VolumeSnapshotContent) {
	r := vsc.Spec.VolumeSnapshotRef
	if vs, err := c.snapshots.VolumeSnapshots(r.Namespace).Get(r.Name); err == nil {
		c.queueGroupOf(vs)
	}
}

// resync queues every group and group content not at rest.
func (c *Controller) resync(context.Context) {
	groups, _ := c.groups.List(labels.Everything())
	for _, g := range groups {
		if g.DeletionTimestamp != nil || g.Status == nil || g.Status.ReadyToUse == nil || !*g.Status.ReadyToUse || g.Status.Error != nil {
			c.groupQ.Add(grouping.GroupKey(g))
		}
	}
	contents, _ := c.contents.List(labels.Everything())
	for _, gc := range contents {
		if gc.DeletionTimestamp != nil || len(gc.Finalizers) == 0 {
			c.contentQ.Add(gc.Name)
		}
	}
}
