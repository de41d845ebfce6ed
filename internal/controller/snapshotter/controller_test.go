package snapshotter

import (
	"context"
	"errors"
	"testing"
	"time"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	snapfake "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned/fake"
	snapinformers "github.com/kubernetes-csi/external-snapshotter/client/v8/informers/externalversions"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/csi"
	"github.com/volplane/volplane/internal/snapshotapi"
)

// build is the loop over fake clients and a pool whose one endpoint is
// never dialed (the syncs tested here call no driver); objs are put in the
// content cache.
func build(t *testing.T, node string, objs ...*snapv1.VolumeSnapshotContent) (*Controller, *snapfake.Clientset) {
	t.Helper()
	return buildOver(t, node, csi.NewPool(&csi.Endpoint{Info: csi.Info{Driver: "d", Controller: true, Snapshot: true, ListSnapshots: true}}), nil, objs...)
}

// buildOver is build over the given pool, with pvs in the PV cache.
func buildOver(t *testing.T, node string, pool *csi.Pool, pvs []*corev1.PersistentVolume, objs ...*snapv1.VolumeSnapshotContent) (*Controller, *snapfake.Clientset) {
	t.Helper()
	snaps := snapfake.NewSimpleClientset()
	client := fake.NewClientset()
	sf := snapinformers.NewSharedInformerFactory(snaps, 0)
	kf := informers.NewSharedInformerFactory(client, 0)
	c, err := New(Config{Client: client, Snapshots: snaps, Informers: kf,
		SnapshotInformers: sf, NodeName: node, Pool: pool,
		Recorder: func(string) record.EventRecorder { return record.NewFakeRecorder(10) }})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		if err := sf.Snapshot().V1().VolumeSnapshotContents().Informer().GetIndexer().Add(o); err != nil {
			t.Fatal(err)
		}
	}
	for _, pv := range pvs {
		if err := c.pvs.Add(pv); err != nil {
			t.Fatal(err)
		}
	}
	return c, snaps
}

func readyContent(name string) *snapv1.VolumeSnapshotContent {
	return &snapv1.VolumeSnapshotContent{
		ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: []string{snapshotapi.ContentFinalizer}},
		Spec: snapv1.VolumeSnapshotContentSpec{VolumeSnapshotRef: corev1.ObjectReference{Namespace: "ns", Name: "s", UID: "u"},
			DeletionPolicy: snapv1.VolumeSnapshotContentDelete, Driver: "d",
			Source: snapv1.VolumeSnapshotContentSource{VolumeHandle: ptr.To("v")}},
		Status: &snapv1.VolumeSnapshotContentStatus{SnapshotHandle: ptr.To("id"), ReadyToUse: ptr.To(true)},
	}
}

// external-snapshotter#1446: a content deleted before its being-deleted
// annotation is not released, and not left to an event either: the sync
// asks for it again after a backoff, growing while it waits.
func TestDeletedWithoutBeingDeletedIsLookedAtAgain(t *testing.T) {
	content := readyContent("c1")
	content.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)}
	c, snaps := build(t, "", content)
	var last time.Duration
	for i := range 3 {
		res, err := c.sync(context.Background(), "c1")
		if err != nil || res.RequeueAfter() <= last {
			t.Fatalf("sync %d = %+v, %v; want a later look, after more than %s", i, res, err, last)
		}
		last = res.RequeueAfter()
	}
	if acts := snaps.Actions(); len(acts) > 0 {
		t.Fatalf("writes without the snapshot-controller's word: %v", acts)
	}
}

// A ready content at rest is done with, without a write.
func TestReadyContentIsDone(t *testing.T) {
	c, snaps := build(t, "", readyContent("c1"))
	res, err := c.sync(context.Background(), "c1")
	if err != nil || res.RequeueAfter() != 0 || res.Immediately() {
		t.Fatalf("sync = %+v, %v; want done", res, err)
	}
	if acts := snaps.Actions(); len(acts) > 0 {
		t.Fatalf("writes for a content at rest: %v", acts)
	}
}

// In node deployment a content labelled for another node is not this
// one's: never queued, never synced into a write.
func TestNodeDeploymentLeavesOtherNodesContents(t *testing.T) {
	other := readyContent("c1")
	other.Status = nil
	other.Labels = map[string]string{snapshotapi.ManagedByLabel: "node-b"}
	c, snaps := build(t, "node-a", other)
	c.onContent(other)
	if c.q.Len() != 0 {
		t.Fatal("another node's content queued")
	}
	if res, err := c.sync(context.Background(), "c1"); err != nil || res.RequeueAfter() != 0 {
		t.Fatalf("sync = %+v, %v", res, err)
	}
	// Unlabelled, with no PV and no snapshot yet: not provably this
	// node's, so left alone too.
	other.Labels = nil
	if res, err := c.sync(context.Background(), "c1"); err != nil || res.RequeueAfter() != 0 {
		t.Fatalf("sync = %+v, %v", res, err)
	}
	if acts := snaps.Actions(); len(acts) > 0 {
		t.Fatalf("writes for another node's content: %v", acts)
	}
}

// A node-local driver answers DeleteSnapshot with OK for an ID it never
// made: a snapshot whose source volume lives on a node whose driver is not
// served is neither deleted elsewhere nor released; the delete waits.
func TestDeleteWaitsForTheSourceNodesDriver(t *testing.T) {
	topo := func(node string) csi.Info {
		return csi.Info{Driver: "d", Controller: true, Snapshot: true, ListSnapshots: true, Topology: map[string]string{"topo/node": node}}
	}
	pool := csi.NewPool(&csi.Endpoint{Info: topo("node-a")}, &csi.Endpoint{Info: topo("node-b")})
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv"}, Spec: corev1.PersistentVolumeSpec{
		PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "d", VolumeHandle: "v"}},
		NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "topo/node", Operator: corev1.NodeSelectorOpIn, Values: []string{"node-c"}}}}}}}}}
	content := readyContent("c1")
	content.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)}
	content.Annotations = map[string]string{snapshotapi.BeingDeleted: "yes"}
	c, snaps := buildOver(t, "", pool, []*corev1.PersistentVolume{pv}, content)
	if _, err := c.sync(context.Background(), "c1"); !errors.Is(err, csi.ErrTopologyNotServed) {
		t.Fatalf("sync: %v, want a wait for the source node's driver", err)
	}
	if acts := snaps.Actions(); len(acts) > 0 {
		t.Fatalf("the content was written (released?) without its snapshot deleted: %v", acts)
	}
}

// The resync queues the contents last seen not at rest, and of those only
// the ones this process serves: a content at rest, or one that came to rest,
// costs it nothing.
func TestResyncQueuesOnlyTheContentsNotAtRest(t *testing.T) {
	ready, settling, rested, pending, other := readyContent("ready"), readyContent("settling"), readyContent("settling"), readyContent("pending"), readyContent("other")
	settling.Status.ReadyToUse = ptr.To(false)
	pending.Status = nil
	other.Status, other.Spec.Driver = nil, "not-served"
	c, _ := build(t, "", ready, rested, pending, other) // the cache as it is now
	for _, content := range []*snapv1.VolumeSnapshotContent{ready, settling, pending, other} {
		c.onContent(content)
	}
	c.onContentUpdate(settling, rested)
	drain := func() []string {
		var got []string
		for c.q.Len() > 0 {
			k, _ := c.q.Get()
			got = append(got, k)
			c.q.Done(k)
		}
		return got
	}
	drain()
	c.resync(context.Background())
	if got := drain(); len(got) != 1 || got[0] != "pending" {
		t.Fatalf("resync queued %v, want [pending]", got)
	}
	c.onContentGone(pending)
	c.resync(context.Background())
	if got := drain(); len(got) != 0 {
		t.Fatalf("resync after the deletion queued %v", got)
	}
}
