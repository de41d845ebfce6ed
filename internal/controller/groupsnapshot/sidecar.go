package groupsnapshot

import (
	"context"
	"fmt"
	"time"

	vgsv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapclient "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	vgslisters "github.com/kubernetes-csi/external-snapshotter/client/v8/listers/volumegroupsnapshot/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/volplane/volplane/internal/attachment"
	"github.com/volplane/volplane/internal/controller/loop"
	"github.com/volplane/volplane/internal/csi"
	"github.com/volplane/volplane/internal/grouping"
	"github.com/volplane/volplane/internal/informerindex"
	"github.com/volplane/volplane/internal/provisioning"
)

// Sidecar is the csi-snapshotter's half for the group contents of the
// drivers in its pool. Build it with NewSidecar, start it with Run.
type Sidecar struct {
	client   kubernetes.Interface
	snaps    snapclient.Interface
	recorder record.EventRecorder
	pool     *csi.Pool
	nodeName string
	now      func() time.Time
	contents vgslisters.VolumeGroupSnapshotContentLister
	classes  vgslisters.VolumeGroupSnapshotClassLister
	pvs      cache.Indexer
	q        workqueue.TypedRateLimitingInterface[string]
	runner   *loop.Runner
	// newest holds the copy each of our writes returned until the
	// informer delivers it: syncs decide from it, and its event wakes
	// nothing (the sync that wrote asked for what follows).
	newest *loop.Newest[*vgsv1.VolumeGroupSnapshotContent]
	// waits counts, per content, the looks in a row at a group the driver
	// says is not ready yet, for their backoff.
	waits                *loop.Waits
	retryStart, retryMax time.Duration
}

// NewSidecar builds the half over the given informers.
func NewSidecar(cfg Config) (*Sidecar, error) {
	cfg, err := cfg.withDefaults(true)
	if err != nil {
		return nil, err
	}
	s := &Sidecar{client: cfg.Client, snaps: cfg.Snapshots, recorder: cfg.Recorder, pool: cfg.Pool, nodeName: cfg.NodeName, now: cfg.Now,
		q:      loop.NewQueue("csi-groupsnapshotter", cfg.RetryStart, cfg.RetryMax),
		newest: loop.NewNewest[*vgsv1.VolumeGroupSnapshotContent](), waits: &loop.Waits{},
		retryStart: cfg.RetryStart, retryMax: cfg.RetryMax}
	gi := cfg.SnapshotInformers.Groupsnapshot().V1()
	s.contents, s.classes = gi.VolumeGroupSnapshotContents().Lister(), gi.VolumeGroupSnapshotClasses().Lister()
	pvInf, err := informerindex.PersistentVolumes(cfg.Informers)
	if err != nil {
		return nil, fmt.Errorf("groupsnapshotter: %w", err)
	}
	s.pvs = pvInf.GetIndexer()
	synced, err := loop.Register(loop.Handler{Informer: gi.VolumeGroupSnapshotContents().Informer(), Funcs: cache.ResourceEventHandlerFuncs{
		AddFunc: s.onContent, UpdateFunc: loop.Updated(s.onContent), DeleteFunc: s.onContentGone}})
	if err != nil {
		return nil, fmt.Errorf("groupsnapshotter: %w", err)
	}
	synced = append(synced, gi.VolumeGroupSnapshotClasses().Informer().HasSynced, pvInf.HasSynced)
	s.runner = &loop.Runner{Name: "GroupSnapshotter", Synced: synced, Workers: cfg.Workers,
		Queues: []loop.Queue{{Q: s.q, Sync: s.sync}}, Resync: s.resync, ResyncPeriod: cfg.ResyncPeriod, Metrics: cfg.Metrics}
	return s, nil
}

// Run starts the workers once the caches are synced and blocks until ctx
// is done.
func (s *Sidecar) Run(ctx context.Context) error { return s.runner.Run(ctx) }

// Ready reports whether the caches are synced and the workers run.
func (s *Sidecar) Ready() bool { return s.runner.Ready() }

// onContent queues a served content on every change but our own last
// write, whose sync already asked for what follows.
func (s *Sidecar) onContent(obj any) {
	gc, ok := tombstone(obj).(*vgsv1.VolumeGroupSnapshotContent)
	if !ok || !s.pool.Serves(gc.Spec.Driver) {
		return
	}
	own := s.newest.IsOwnWrite(gc.Name, gc)
	s.newest.Observe(gc.Name, gc)
	if !own {
		s.q.Add(gc.Name)
	}
}

func (s *Sidecar) onContentGone(obj any) {
	if gc, ok := loop.As[*vgsv1.VolumeGroupSnapshotContent](obj); ok {
		s.newest.Forget(gc.Name)
		s.waits.Done(gc.Name)
	}
}

// resync queues the served contents not at rest: not ready, or being
// deleted.
func (s *Sidecar) resync(context.Context) {
	contents, _ := s.contents.List(labels.Everything())
	for _, gc := range contents {
		ready := gc.Status != nil && gc.Status.ReadyToUse != nil && *gc.Status.ReadyToUse
		if gc.DeletionTimestamp != nil || !ready {
			s.onContent(gc)
		}
	}
}

// endpoint is the one endpoint of the content's driver that holds every
// volume of the group: the one recorded when the group was taken, else
// told by the volumes' PVs; with no PV left (a group
// deleted after its claims), the driver's only endpoint, if it has one.
func (s *Sidecar) endpoint(gc *vgsv1.VolumeGroupSnapshotContent) (*csi.Endpoint, error) {
	ep, _, err := s.locate(gc)
	return ep, err
}

// locate is endpoint, and whether the choice was told by the content (its
// record or its volumes' PVs) rather than by the driver having one
// endpoint.
func (s *Sidecar) locate(gc *vgsv1.VolumeGroupSnapshotContent) (*csi.Endpoint, bool, error) {
	driver := gc.Spec.Driver
	if rec, ok := gc.Annotations[grouping.EndpointAnnotation]; ok {
		seg, err := grouping.ParseSegment(rec)
		if err != nil {
			return nil, false, err
		}
		if ep := s.pool.ForSegment(driver, seg); ep != nil {
			return ep, true, nil
		}
		return nil, false, fmt.Errorf("the endpoint of driver %s at %s that took the group is not served", driver, rec)
	}
	handles := gc.Spec.Source.VolumeHandles
	if gc.Status != nil {
		for _, i := range gc.Status.VolumeSnapshotInfoList {
			handles = append(handles, i.VolumeHandle)
		}
	}
	var chosen *csi.Endpoint
	var first string
	for _, h := range handles {
		pvs, err := informerindex.PVsOf(s.pvs, attachment.UniqueVolumeName(driver, h))
		if err != nil {
			return nil, false, err
		}
		if len(pvs) == 0 {
			continue
		}
		// The driver's view of the PV: a migrated in-tree PV's node
		// affinity is on the in-tree keys until translated.
		pv, err := provisioning.AsCSI(pvs[0])
		if err != nil {
			return nil, false, fmt.Errorf("volume %s: %w", h, err)
		}
		ep, err := s.pool.ForVolume(driver, pv)
		if err != nil {
			return nil, false, fmt.Errorf("volume %s: %w", h, err)
		}
		if chosen != nil && ep != chosen {
			return nil, false, fmt.Errorf("the volumes %s and %s are held by different endpoints of driver %s (%v and %v): a group snapshot is taken by one endpoint, so every volume of the group must be on one node",
				first, h, driver, chosen.Info.Topology, ep.Info.Topology)
		}
		if chosen == nil {
			chosen, first = ep, h
		}
	}
	if chosen != nil {
		return chosen, true, nil
	}
	ep, err := s.pool.ForDelete(driver, nil)
	return ep, false, err
}
