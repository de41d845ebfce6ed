package groupsnapshot

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	vgsv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	snapfake "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned/fake"
	snapinformers "github.com/kubernetes-csi/external-snapshotter/client/v8/informers/externalversions"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"

	"github.com/volplane/volplane/internal/controller/loop"
	"github.com/volplane/volplane/internal/csi"
	"github.com/volplane/volplane/internal/grouping"
	"github.com/volplane/volplane/internal/informerindex"
	"github.com/volplane/volplane/internal/snapshotapi"
)

const driver = "hostpath.csi.volplane.io"

func claimAndPV(ns, name, node string) (*v1.PersistentVolumeClaim, *v1.PersistentVolume) {
	c := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID("u-" + ns + "-" + name),
		Labels: map[string]string{"app": "db"}},
		Spec: v1.PersistentVolumeClaimSpec{VolumeName: "pv-" + ns + "-" + name}, Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound}}
	pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: c.Spec.VolumeName},
		Spec: v1.PersistentVolumeSpec{ClaimRef: &v1.ObjectReference{Namespace: ns, Name: name, UID: c.UID},
			PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: driver, VolumeHandle: "vol-" + ns + "-" + name}}}}
	if node != "" {
		pv.Spec.NodeAffinity = &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
			MatchExpressions: []v1.NodeSelectorRequirement{{Key: "topology.hostpath.csi/node", Operator: v1.NodeSelectorOpIn, Values: []string{node}}}}}}}
	}
	return c, pv
}

type bed struct {
	snaps  *snapfake.Clientset
	events *record.FakeRecorder
}

// start runs the controller half over fakes holding objs.
func start(t *testing.T, core []runtime.Object, snaps []runtime.Object) bed {
	t.Helper()
	client := fake.NewClientset(core...)
	sc := snapfake.NewSimpleClientset(snaps...)
	// The API server gives every object a UID; the fake does not.
	sc.PrependReactor("create", "volumesnapshots", func(a k8stesting.Action) (bool, runtime.Object, error) {
		vs := a.(k8stesting.CreateAction).GetObject().(*snapv1.VolumeSnapshot)
		vs.UID = types.UID("uid-" + vs.Name)
		return false, nil, nil
	})
	inf, sinf := informers.NewSharedInformerFactory(client, 0), snapinformers.NewSharedInformerFactory(sc, 0)
	events := record.NewFakeRecorder(100)
	c, err := NewController(Config{Client: client, Snapshots: sc, Informers: inf, SnapshotInformers: sinf, Recorder: events,
		Settings: loop.Settings{RetryStart: time.Millisecond, RetryMax: 50 * time.Millisecond, ResyncPeriod: 50 * time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	inf.Start(ctx.Done())
	sinf.Start(ctx.Done())
	done := make(chan struct{})
	go func() { defer close(done); _ = c.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done; inf.Shutdown(); sinf.Shutdown() })
	return bed{snaps: sc, events: events}
}

func eventually(t *testing.T, what string, cond func() string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		wrong := cond()
		if wrong == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %s", what, wrong)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The controller half over a fake API: content, finalizers, then, once
// the sidecar's answer is in the content, members and a ready group.
func TestControllerMakesContentAndMembers(t *testing.T) {
	c0, pv0 := claimAndPV("team-a", "db-0", "")
	c1, pv1 := claimAndPV("team-b", "db-1", "") // same label, another namespace
	g := &vgsv1.VolumeGroupSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "grp", Namespace: "team-a", UID: "g-uid"},
		Spec: vgsv1.VolumeGroupSnapshotSpec{Source: vgsv1.VolumeGroupSnapshotSource{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}}}}
	class := &vgsv1.VolumeGroupSnapshotClass{ObjectMeta: metav1.ObjectMeta{Name: "gc", Annotations: map[string]string{snapshotapi.DefaultGroupClassAnnotation: "true"}},
		Driver: driver, DeletionPolicy: snapv1.VolumeSnapshotContentDelete}
	b := start(t, []runtime.Object{c0, pv0, c1, pv1}, []runtime.Object{g, class})
	ctx := context.Background()
	contents := b.snaps.GroupsnapshotV1().VolumeGroupSnapshotContents()
	name := snapshotapi.GroupContentName("g-uid")
	var gc *vgsv1.VolumeGroupSnapshotContent
	eventually(t, "content with its finalizer", func() string {
		var err error
		if gc, err = contents.Get(ctx, name, metav1.GetOptions{}); err != nil {
			return err.Error()
		}
		if len(gc.Finalizers) != 1 || fmt.Sprint(gc.Spec.Source.VolumeHandles) != "[vol-team-a-db-0]" {
			return fmt.Sprintf("%v %v", gc.Finalizers, gc.Spec.Source.VolumeHandles)
		}
		return ""
	})
	// The sidecar's answer.
	gc.Status = &vgsv1.VolumeGroupSnapshotContentStatus{VolumeGroupSnapshotHandle: ptr("gsh"), ReadyToUse: ptr(true),
		CreationTime:           &metav1.Time{Time: time.Now()},
		VolumeSnapshotInfoList: []vgsv1.VolumeSnapshotInfo{{VolumeHandle: "vol-team-a-db-0", SnapshotHandle: "s0", ReadyToUse: ptr(true)}}}
	if _, err := contents.UpdateStatus(ctx, gc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	member := grouping.MemberSnapshotName("g-uid", "vol-team-a-db-0")
	eventually(t, "group ready with its member bound", func() string {
		g, err := b.snaps.GroupsnapshotV1().VolumeGroupSnapshots("team-a").Get(ctx, "grp", metav1.GetOptions{})
		if err != nil || g.Status == nil || g.Status.ReadyToUse == nil || !*g.Status.ReadyToUse {
			return fmt.Sprintf("group %v %+v", err, g)
		}
		vs, err := b.snaps.SnapshotV1().VolumeSnapshots("team-a").Get(ctx, member, metav1.GetOptions{})
		if err != nil || vs.Status == nil || vs.Status.BoundVolumeSnapshotContentName == nil {
			return fmt.Sprintf("member %v %+v", err, vs)
		}
		return ""
	})
	var reasons []string
	for len(b.events.Events) > 0 {
		reasons = append(reasons, strings.Fields(<-b.events.Events)[1])
	}
	if got := strings.Join(reasons, " "); !strings.Contains(got, "CreatingGroupSnapshot") || !strings.Contains(got, "GroupSnapshotReady") {
		t.Errorf("events %s", got)
	}
}

func ptr[T any](v T) *T { return &v }

// The sidecar takes a group from the one endpoint that holds all its
// volumes, and refuses a group spread over two nodes.
func TestSidecarEndpoint(t *testing.T) {
	_, pvA := claimAndPV("ns", "a", "node-1")
	_, pvB := claimAndPV("ns", "b", "node-1")
	_, pvC := claimAndPV("ns", "c", "node-2")
	client := fake.NewClientset(pvA, pvB, pvC)
	inf := informers.NewSharedInformerFactory(client, 0)
	pvInf, err := informerindex.PersistentVolumes(inf)
	if err != nil {
		t.Fatal(err)
	}
	for _, pv := range []*v1.PersistentVolume{pvA, pvB, pvC} {
		_ = pvInf.GetIndexer().Add(pv)
	}
	ep := func(node string) *csi.Endpoint {
		return &csi.Endpoint{Address: node, Info: csi.Info{Driver: driver, Controller: true, Node: true, GroupSnapshot: true,
			Topology: map[string]string{"topology.hostpath.csi/node": node}}}
	}
	n1, n2 := ep("node-1"), ep("node-2")
	s := &Sidecar{pool: csi.NewPool(n1, n2), pvs: pvInf.GetIndexer()}
	content := func(handles ...string) *vgsv1.VolumeGroupSnapshotContent {
		return &vgsv1.VolumeGroupSnapshotContent{Spec: vgsv1.VolumeGroupSnapshotContentSpec{Driver: driver,
			Source: vgsv1.VolumeGroupSnapshotContentSource{VolumeHandles: handles}}}
	}
	if got, err := s.endpoint(content("vol-ns-a", "vol-ns-b")); err != nil || got != n1 {
		t.Errorf("one node: %v %v", got, err)
	}
	if _, err := s.endpoint(content("vol-ns-a", "vol-ns-c")); err == nil || !strings.Contains(err.Error(), "different endpoints") {
		t.Errorf("two nodes: %v", err)
	}
	// No PV left and two endpoints: nothing tells which one holds it.
	if _, err := s.endpoint(content("vol-gone")); err == nil {
		t.Errorf("ambiguous endpoint chosen")
	}
	// The endpoint recorded when the group was taken, PVs or not.
	recorded := content("vol-gone")
	recorded.Annotations = map[string]string{grouping.EndpointAnnotation: grouping.FormatSegment(n2.Info.Topology)}
	if got, err := s.endpoint(recorded); err != nil || got != n2 {
		t.Errorf("recorded: %v %v", got, err)
	}
	recorded.Annotations[grouping.EndpointAnnotation] = "topology.hostpath.csi/node=node-3"
	if _, err := s.endpoint(recorded); err == nil || !strings.Contains(err.Error(), "not served") {
		t.Errorf("recorded, not served: %v", err)
	}

	// Node deployment: node-2's sidecar knows which groups are its own;
	// one with no PV and no record is not told to be.
	node2 := &Sidecar{pool: csi.NewPool(n2), pvs: pvInf.GetIndexer(), nodeName: "node-2"}
	if _, _, err := node2.locate(content("vol-ns-a", "vol-ns-b")); err == nil {
		t.Errorf("node-1's group located on node-2")
	}
	if ep, known, err := node2.locate(content("vol-ns-c")); err != nil || !known || ep != n2 {
		t.Errorf("node-2's group: %v %v %v", ep, known, err)
	}
	if _, known, _ := node2.locate(content("vol-gone")); known {
		t.Errorf("a group of nothing known taken by node-2")
	}
}
