package snapshot

import (
	"context"
	"fmt"

	groupv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	snapclient "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	grouplisters "github.com/kubernetes-csi/external-snapshotter/client/v8/listers/volumegroupsnapshot/v1"
	snaplisters "github.com/kubernetes-csi/external-snapshotter/client/v8/listers/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/controller/loop"
	"github.com/volplane/volplane/internal/grouping"
	"github.com/volplane/volplane/internal/informerindex"
	"github.com/volplane/volplane/internal/keyedmutex"
	"github.com/volplane/volplane/internal/snapshotapi"
	"github.com/volplane/volplane/internal/snapshotbinding"
)

// Controller is the snapshot loop. Build it with New, start it with Run.
type Controller struct {
	client    kubernetes.Interface
	snaps     snapclient.Interface
	recorder  record.EventRecorder
	clock     clock.PassiveClock
	snapshots snaplisters.VolumeSnapshotLister
	contents  snaplisters.VolumeSnapshotContentLister
	classes   snaplisters.VolumeSnapshotClassLister
	claims    corelisters.PersistentVolumeClaimLister
	pvs       corelisters.PersistentVolumeLister
	nodes     corelisters.NodeLister
	// groups and groupContents are nil without the group API.
	groups        grouplisters.VolumeGroupSnapshotLister
	groupContents grouplisters.VolumeGroupSnapshotContentLister
	// byClaim indexes the snapshots by their source claim
	// (informerindex.ClaimOfSnapshot).
	byClaim cache.Indexer
	// claimLocks serializes the syncs of the snapshots of one claim
	// (namespace/claim): one's release of the claim's finalizer and
	// another's content creation never interleave.
	claimLocks *keyedmutex.Mutex
	// newClaim holds the claims this loop wrote that the cache has not
	// delivered yet: a sync after a release must not trust a cached
	// finalizer that is gone.
	newClaim *loop.Newest[*corev1.PersistentVolumeClaim]
	// bypassed holds the UIDs of snapshots seen deleted past this loop's
	// finalizers (snapshotbinding.SkippedFinalizers), until their content
	// is gone.
	bypassed *loop.UIDSet
	// snapQ follows up a snapshot whose content changed ahead of the
	// snapshots not looked at yet (loop.FollowUpQueue).
	snapQ    *loop.FollowUpQueue
	contentQ workqueue.TypedRateLimitingInterface[string]
	runner   *loop.Runner
}

// New builds the loop over the given informers.
func New(cfg Config) (*Controller, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	c := &Controller{client: cfg.Client, snaps: cfg.Snapshots, recorder: cfg.Recorder, clock: cfg.Clock,
		claimLocks: keyedmutex.New(), newClaim: loop.NewNewest[*corev1.PersistentVolumeClaim](), bypassed: loop.NewUIDSet(),
		snapQ:    loop.NewFollowUpQueue("snapshot", cfg.RetryStart, cfg.RetryMax),
		contentQ: loop.NewQueue("snapshot-content", cfg.RetryStart, cfg.RetryMax)}
	v1 := cfg.SnapshotInformers.Snapshot().V1()
	snapInf, contentInf, classInf := v1.VolumeSnapshots(), v1.VolumeSnapshotContents(), v1.VolumeSnapshotClasses()
	indexed, err := informerindex.VolumeSnapshots(cfg.SnapshotInformers)
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	c.byClaim = indexed.GetIndexer()
	claimInf := cfg.Informers.Core().V1().PersistentVolumeClaims()
	pvInf := cfg.Informers.Core().V1().PersistentVolumes()
	c.snapshots, c.contents, c.classes = snapInf.Lister(), contentInf.Lister(), classInf.Lister()
	c.claims, c.pvs = claimInf.Lister(), pvInf.Lister()
	nodeInf := cfg.Informers.Core().V1().Nodes()
	c.nodes = nodeInf.Lister()
	handlers := []loop.Handler{
		{Informer: snapInf.Informer(), Funcs: cache.ResourceEventHandlerFuncs{
			AddFunc: c.onSnapshot, UpdateFunc: loop.Updated(c.onSnapshot), DeleteFunc: c.onSnapshotGone}},
		{Informer: contentInf.Informer(), Funcs: cache.ResourceEventHandlerFuncs{
			AddFunc: c.onContent, UpdateFunc: loop.Updated(c.onContent), DeleteFunc: c.onContentGone}},
		{Informer: claimInf.Informer(), Funcs: cache.ResourceEventHandlerFuncs{
			AddFunc: c.onClaim, UpdateFunc: loop.Updated(c.onClaim), DeleteFunc: c.onClaimGone}},
	}
	if cfg.Groups {
		g := cfg.SnapshotInformers.Groupsnapshot().V1()
		c.groups, c.groupContents = g.VolumeGroupSnapshots().Lister(), g.VolumeGroupSnapshotContents().Lister()
		handlers = append(handlers, loop.Handler{Informer: g.VolumeGroupSnapshots().Informer(),
			Funcs: cache.ResourceEventHandlerFuncs{DeleteFunc: c.onGroupGone}})
	}
	synced, err := loop.Register(handlers...)
	if err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	synced = append(synced, classInf.Informer().HasSynced, pvInf.Informer().HasSynced, nodeInf.Informer().HasSynced)
	if cfg.Groups {
		synced = append(synced, cfg.SnapshotInformers.Groupsnapshot().V1().VolumeGroupSnapshotContents().Informer().HasSynced)
	}
	c.runner = &loop.Runner{Name: "Snapshot", Synced: synced, Workers: cfg.Workers, Metrics: cfg.Metrics,
		Queues: []loop.Queue{{Q: c.snapQ, Sync: c.syncSnapshot}, {Q: c.contentQ, Sync: c.syncContent}}}
	return c, nil
}

// Run starts the workers once the caches are synced and blocks until ctx
// is done. The informer factories must be started by the caller after New.
func (c *Controller) Run(ctx context.Context) error { return c.runner.Run(ctx) }

// Ready reports whether the caches are synced and the workers run.
func (c *Controller) Ready() bool { return c.runner.Ready() }

func snapshotKey(namespace, name string) string { return namespace + "/" + name }

func (c *Controller) onSnapshot(obj any) {
	if s, ok := loop.As[*snapv1.VolumeSnapshot](obj); ok {
		c.snapQ.Add(snapshotKey(s.Namespace, s.Name))
	}
}

// onSnapshotGone queues its content (whose being-deleted state may
// change) and the other snapshots of its claim.
func (c *Controller) onSnapshotGone(obj any) {
	s, ok := loop.As[*snapv1.VolumeSnapshot](obj)
	if !ok {
		return
	}
	if _, final := obj.(*snapv1.VolumeSnapshot); final && snapshotbinding.SkippedFinalizers(s) {
		// The watch's own delete event (a relist's tombstone may be an
		// older copy): deleted past our finalizers, its content is ours to
		// deal with.
		c.bypassed.Add(s.UID)
	}
	if name := snapshotbinding.Designated(s); name != "" {
		c.contentQ.Add(name)
	} else if snapshotbinding.GroupOf(s) != "" {
		// A group member deleted before it was bound designates no
		// content, yet its content may now be an orphan to delete
		// (snapshotbinding.DecideContent): look at the one named after it.
		if name, ok := grouping.MemberContentOf(s.Name); ok {
			c.contentQ.Add(name)
		}
	}
	if claim := ptr.Deref(s.Spec.Source.PersistentVolumeClaimName, ""); claim != "" {
		c.queueSnapshotsOf(s.Namespace, claim)
	}
}

// onContent queues the content, and the snapshot it points at as a
// follow-up: its content made, bound or ready is the snapshot's next step.
func (c *Controller) onContent(obj any) {
	content, ok := loop.As[*snapv1.VolumeSnapshotContent](obj)
	if !ok {
		return
	}
	c.contentQ.Add(content.Name)
	if r := content.Spec.VolumeSnapshotRef; r.Name != "" && r.Namespace != "" {
		c.snapQ.FollowUp(snapshotKey(r.Namespace, r.Name))
	}
}

func (c *Controller) onContentGone(obj any) {
	if content, ok := loop.As[*snapv1.VolumeSnapshotContent](obj); ok {
		c.bypassed.Remove(content.Spec.VolumeSnapshotRef.UID)
		c.onContent(content)
	}
}

// onClaim queues the snapshots of the claim and the snapshot it restores
// from.
func (c *Controller) onClaim(obj any) {
	claim, ok := loop.As[*corev1.PersistentVolumeClaim](obj)
	if !ok {
		return
	}
	c.newClaim.Observe(snapshotKey(claim.Namespace, claim.Name), claim)
	c.queueSnapshotsOf(claim.Namespace, claim.Name)
	if d := claim.Spec.DataSource; d != nil && d.Kind == snapshotapi.KindSnapshot {
		c.snapQ.Add(snapshotKey(claim.Namespace, d.Name))
	}
	if d := claim.Spec.DataSourceRef; d != nil && d.Kind == snapshotapi.KindSnapshot && ptr.Deref(d.Namespace, claim.Namespace) == claim.Namespace {
		c.snapQ.Add(snapshotKey(claim.Namespace, d.Name))
	}
}

func (c *Controller) onClaimGone(obj any) {
	if claim, ok := loop.As[*corev1.PersistentVolumeClaim](obj); ok {
		c.newClaim.Forget(snapshotKey(claim.Namespace, claim.Name))
		c.onClaim(claim)
	}
}

// queueSnapshotsOf queues the namespace's snapshots of the claim.
func (c *Controller) queueSnapshotsOf(namespace, claim string) {
	list, err := informerindex.SnapshotsOf(c.byClaim, namespace, claim)
	if err != nil {
		return
	}
	for _, s := range list {
		c.snapQ.Add(snapshotKey(s.Namespace, s.Name))
	}
}

// onGroupGone queues the group's members, whose deletion it held.
func (c *Controller) onGroupGone(obj any) {
	g, ok := loop.As[*groupv1.VolumeGroupSnapshot](obj)
	if !ok {
		return
	}
	list, err := c.snapshots.VolumeSnapshots(g.Namespace).List(labels.Everything())
	if err != nil {
		return
	}
	for _, s := range list {
		if snapshotbinding.GroupOf(s) == g.Name {
			c.snapQ.Add(snapshotKey(s.Namespace, s.Name))
		}
	}
}
