package groupsnapshot

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"

	vgsv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	snapfake "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned/fake"
	snapinformers "github.com/kubernetes-csi/external-snapshotter/client/v8/informers/externalversions"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	"github.com/volplane/volplane/internal/csi"
	"github.com/volplane/volplane/internal/informerindex"
	"github.com/volplane/volplane/internal/snapshotapi"
)

// A group whose volumes no served endpoint holds (one is on node-2, whose
// driver is not served), synced again and again as the events of others'
// writes make it: its refusal stays in the content's status. Every other
// sync once wrote the status back empty, so e2e's
// TestGroupNoEndpointHoldsRefused saw it nil after 30 s about once in
// five runs (the error was there only between backoffs).
func TestRefusedGroupKeepsItsRefusalAcrossSyncs(t *testing.T) {
	ctx := context.Background()
	_, pvA := claimAndPV("ns", "a", "node-1")
	_, pvB := claimAndPV("ns", "b", "node-2")
	class := &vgsv1.VolumeGroupSnapshotClass{ObjectMeta: metav1.ObjectMeta{Name: "gc"}, Driver: driver, DeletionPolicy: snapv1.VolumeSnapshotContentDelete}
	content := &vgsv1.VolumeGroupSnapshotContent{ObjectMeta: metav1.ObjectMeta{Name: "groupsnapcontent-g", UID: "c-uid", ResourceVersion: "1",
		Finalizers: []string{snapshotapi.GroupContentFinalizer}},
		Spec: vgsv1.VolumeGroupSnapshotContentSpec{Driver: driver, DeletionPolicy: snapv1.VolumeSnapshotContentDelete,
			VolumeGroupSnapshotClassName: &class.Name,
			VolumeGroupSnapshotRef:       v1.ObjectReference{Namespace: "ns", Name: "grp", UID: "g-uid"},
			Source:                       vgsv1.VolumeGroupSnapshotContentSource{VolumeHandles: []string{"vol-ns-a", "vol-ns-b"}}}}
	client := fake.NewClientset(pvA, pvB)
	snaps := snapfake.NewSimpleClientset(class, content)
	var rv atomic.Int64
	rv.Store(1)
	var statuses []*vgsv1.VolumeGroupSnapshotContentStatus
	snaps.PrependReactor("update", "volumegroupsnapshotcontents", func(a k8stesting.Action) (bool, runtime.Object, error) {
		gc := a.(k8stesting.UpdateAction).GetObject().(*vgsv1.VolumeGroupSnapshotContent)
		gc.ResourceVersion = strconv.FormatInt(rv.Add(1), 10)
		if a.GetSubresource() == "status" {
			statuses = append(statuses, gc.Status.DeepCopy())
		}
		return false, nil, nil
	})
	inf, sinf := informers.NewSharedInformerFactory(client, 0), snapinformers.NewSharedInformerFactory(snaps, 0)
	n1 := &csi.Endpoint{Address: "node-1", Info: csi.Info{Driver: driver, Controller: true, Node: true, GroupSnapshot: true,
		Topology: map[string]string{"topology.hostpath.csi/node": "node-1"}}}
	s, err := NewSidecar(Config{Client: client, Snapshots: snaps, Informers: inf, SnapshotInformers: sinf,
		Recorder: record.NewFakeRecorder(10), Pool: csi.NewPool(n1)})
	if err != nil {
		t.Fatal(err)
	}
	pvInf, err := informerindex.PersistentVolumes(inf)
	if err != nil {
		t.Fatal(err)
	}
	// The caches: the content as created; only our own writes follow.
	for _, add := range []error{pvInf.GetIndexer().Add(pvA), pvInf.GetIndexer().Add(pvB),
		sinf.Groupsnapshot().V1().VolumeGroupSnapshotClasses().Informer().GetIndexer().Add(class),
		sinf.Groupsnapshot().V1().VolumeGroupSnapshotContents().Informer().GetIndexer().Add(content)} {
		if add != nil {
			t.Fatal(add)
		}
	}
	for i := range 3 {
		if _, err := s.sync(ctx, content.Name); err == nil {
			t.Fatalf("sync %d: a refused group's sync asks for no backoff", i)
		}
		gc, err := snaps.GroupsnapshotV1().VolumeGroupSnapshotContents().Get(ctx, content.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if gc.Status == nil || gc.Status.Error == nil {
			t.Fatalf("after sync %d the content's status is %+v, want the refusal (status writes %d)", i, gc.Status, len(statuses))
		}
		if _, marked := gc.Annotations[snapshotapi.GroupBeingCreated]; marked {
			t.Fatalf("a refused group was marked being created")
		}
	}
	if len(statuses) != 1 {
		t.Errorf("the refusal was written %d times, want once", len(statuses))
	}
}

// A group the driver refuses for good (its source volume is gone: a final
// NotFound) is marked, asked and unmarked in one sync that fails, so its
// retries back off. The mark was once a sync of its own, which succeeded
// and reset the backoff: the soak (seed 42) saw such a group marked, asked
// and unmarked several times a second for minutes.
func TestGroupRefusedForGoodIsAskedInTheSyncThatMarksIt(t *testing.T) {
	ctx := context.Background()
	ep := serveDriver(t)
	hp.createFailures.Store(0)
	class := &vgsv1.VolumeGroupSnapshotClass{ObjectMeta: metav1.ObjectMeta{Name: "gc"}, Driver: driver, DeletionPolicy: snapv1.VolumeSnapshotContentDelete}
	content := &vgsv1.VolumeGroupSnapshotContent{ObjectMeta: metav1.ObjectMeta{Name: "groupsnapcontent-gone", UID: "c-gone", ResourceVersion: "1",
		Finalizers: []string{snapshotapi.GroupContentFinalizer}},
		Spec: vgsv1.VolumeGroupSnapshotContentSpec{Driver: driver, DeletionPolicy: snapv1.VolumeSnapshotContentDelete,
			VolumeGroupSnapshotClassName: &class.Name,
			VolumeGroupSnapshotRef:       v1.ObjectReference{Namespace: "ns", Name: "grp", UID: "g-gone"},
			Source:                       vgsv1.VolumeGroupSnapshotContentSource{VolumeHandles: []string{"vol-that-went"}}}}
	client := fake.NewClientset()
	snaps := snapfake.NewSimpleClientset(class, content)
	var rv atomic.Int64
	rv.Store(1)
	snaps.PrependReactor("update", "volumegroupsnapshotcontents", func(a k8stesting.Action) (bool, runtime.Object, error) {
		a.(k8stesting.UpdateAction).GetObject().(metav1.Object).SetResourceVersion(strconv.FormatInt(rv.Add(1), 10))
		return false, nil, nil
	})
	inf, sinf := informers.NewSharedInformerFactory(client, 0), snapinformers.NewSharedInformerFactory(snaps, 0)
	s, err := NewSidecar(Config{Client: client, Snapshots: snaps, Informers: inf, SnapshotInformers: sinf,
		Recorder: record.NewFakeRecorder(10), Pool: csi.NewPool(ep)})
	if err != nil {
		t.Fatal(err)
	}
	for _, add := range []error{sinf.Groupsnapshot().V1().VolumeGroupSnapshotClasses().Informer().GetIndexer().Add(class),
		sinf.Groupsnapshot().V1().VolumeGroupSnapshotContents().Informer().GetIndexer().Add(content)} {
		if add != nil {
			t.Fatal(add)
		}
	}
	before := hp.creates.Load()
	if _, err := s.sync(ctx, content.Name); err == nil {
		t.Fatalf("the sync that marked the group succeeded: its backoff starts again")
	}
	if got := hp.creates.Load() - before; got != 1 {
		t.Errorf("%d CreateVolumeGroupSnapshot calls in the sync, want 1", got)
	}
	gc, err := snaps.GroupsnapshotV1().VolumeGroupSnapshotContents().Get(ctx, content.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, marked := gc.Annotations[snapshotapi.GroupBeingCreated]; marked || gc.Status == nil || gc.Status.Error == nil {
		t.Errorf("after a final refusal: annotations %v, status %+v; want unmarked with the error", gc.Annotations, gc.Status)
	}
}
