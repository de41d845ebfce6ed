package provisioner

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/controller/inflight"
	"github.com/volplane/volplane/internal/csi"
	"github.com/volplane/volplane/internal/hostpath/hostpathtest"
	"github.com/volplane/volplane/internal/provisioning"
)

// world is a controller test: the fake API, a real hostpath driver per
// node served in process, and a running provisioner.
type world struct {
	t        *testing.T
	ctx      context.Context
	client   *fake.Clientset
	pool     *csi.Pool
	recorder *record.FakeRecorder
	events   []string
	// ledger, if set before start, is the capacity accounting the
	// provisioner shares (nil: one of its own).
	ledger *inflight.Ledger
	// markAfter, if set before start, is the provisioner's MarkAfter (0:
	// every claim marked before its create).
	markAfter time.Duration
}

func newWorld(t *testing.T, objs ...runtime.Object) *world {
	t.Helper()
	return newWorldOf(t, hostpathtest.Serve, objs...)
}

// newWorldOf is newWorld with drivers served by serve (e.g. with attach
// required).
func newWorldOf(t *testing.T, serve func(testing.TB, string, int64) string, objs ...runtime.Object) *world {
	t.Helper()
	var eps []string
	for _, n := range []string{"a", "b"} {
		eps = append(eps, serve(t, n, 1<<30))
		objs = append(objs, node(n))
	}
	ctx, cancel := context.WithCancel(context.Background())
	pool, err := csi.DialPool(ctx, eps, nil)
	if err != nil {
		t.Fatal(err)
	}
	w := &world{t: t, ctx: ctx, client: fake.NewClientset(objs...), pool: pool, recorder: record.NewFakeRecorder(100)}
	// The API server gives every write a newer resourceVersion, by which
	// the loop tells its own writes from older informer copies
	// (loop.Newest); the fake keeps whatever the object carried.
	var rv atomic.Int64
	rv.Store(1000)
	w.client.PrependReactor("update", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if m, err := meta.Accessor(a.(k8stesting.UpdateAction).GetObject()); err == nil {
			m.SetResourceVersion(strconv.FormatInt(rv.Add(1), 10))
		}
		return false, nil, nil
	})
	t.Cleanup(func() { cancel(); _ = pool.Close() })
	return w
}

// start runs the provisioner until the test ends.
func (w *world) start() *Controller {
	w.t.Helper()
	factory := informers.NewSharedInformerFactory(w.client, 0)
	c, err := New(Config{Client: w.client, Informers: factory, Pool: w.pool, Workers: 2, ResyncPeriod: 200 * time.Millisecond,
		Recorder: func(string) record.EventRecorder { return w.recorder }, Ledger: w.ledger, MarkAfter: w.markAfter})
	if err != nil {
		w.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(w.ctx)
	done := make(chan error, 1)
	factory.Start(ctx.Done())
	go func() { done <- c.Run(ctx) }()
	w.t.Cleanup(func() { cancel(); <-done; factory.Shutdown() })
	return c
}

// backend lists the volume IDs every driver holds.
func (w *world) backend() []string {
	w.t.Helper()
	var ids []string
	for _, e := range w.pool.Endpoints(testDriver) {
		vols, err := e.ListVolumes(w.ctx)
		if err != nil {
			w.t.Fatal(err)
		}
		for _, v := range vols {
			ids = append(ids, e.Info.NodeID+"/"+v.GetVolume().GetVolumeId())
		}
	}
	return ids
}

func (w *world) eventually(what string, cond func() string) {
	w.t.Helper()
	for end := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		wrong := cond()
		if wrong == "" {
			return
		}
		if time.Now().After(end) {
			w.t.Fatalf("%s: %s", what, wrong)
		}
	}
}

func (w *world) claim() *v1.PersistentVolumeClaim {
	c, err := w.client.CoreV1().PersistentVolumeClaims("ns").Get(w.ctx, "data", metav1.GetOptions{})
	if err != nil {
		w.t.Fatal(err)
	}
	return c
}

// pv reads the PV from the fake's store, past any reactor a test added.
func (w *world) pv(name string) *v1.PersistentVolume {
	obj, err := w.client.Tracker().Get(v1.SchemeGroupVersion.WithResource("persistentvolumes"), "", name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		w.t.Fatal(err)
	}
	return obj.(*v1.PersistentVolume).DeepCopy()
}

// sawEvent drains the recorder and says whether an event starting with
// prefix ("Type Reason message") was recorded so far.
func (w *world) sawEvent(prefix string) bool {
	for {
		select {
		case e := <-w.recorder.Events:
			w.events = append(w.events, e)
			continue
		default:
		}
		break
	}
	for _, e := range w.events {
		if strings.HasPrefix(e, prefix) {
			return true
		}
	}
	return false
}

func TestProvisionsOnePreboundVolume(t *testing.T) {
	w := newWorld(t, claim(), class())
	w.start()
	w.eventually("PV made and finalizer gone", func() string {
		pv := w.pv("pvc-uid-1")
		switch {
		case pv == nil:
			return "no PV"
		case hasFinalizer(w.claim().Finalizers, provisioning.ClaimFinalizer):
			return "claim still has the in-progress finalizer"
		case !w.sawEvent("Normal ProvisioningSucceeded Successfully provisioned volume pvc-uid-1"):
			return fmt.Sprintf("events %v", w.events)
		}
		return ""
	})
	if b := w.backend(); len(b) != 1 {
		t.Errorf("backend volumes %v, want one", b)
	}
	if !w.sawEvent(`Normal Provisioning External provisioner is provisioning volume for claim "ns/data"`) {
		t.Errorf("no Provisioning event: %v", w.events)
	}
}

// The PV create keeps failing after CreateVolume succeeded, then the claim
// is deleted: the backend volume is deleted, and the finalizer goes.
// The same with the claim marked only after the refused PV create (a
// create answered at once marks nothing before: Config.MarkAfter).
func TestFailingPVCreateThenDeletedClaimLeavesNoVolume(t *testing.T) {
	for _, markAfter := range []time.Duration{0, time.Minute} {
		t.Run("mark after "+markAfter.String(), func(t *testing.T) { failingPVCreateThenDeletedClaim(t, markAfter) })
	}
}

func failingPVCreateThenDeletedClaim(t *testing.T, markAfter time.Duration) {
	w := newWorld(t, claim(), class())
	w.client.PrependReactor("create", "persistentvolumes", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("injected: PV create refused")
	})
	w.markAfter = markAfter
	w.start()
	w.eventually("the backend volume made and the finalizer kept", func() string {
		if b := w.backend(); len(b) != 1 {
			return fmt.Sprintf("backend %v", b)
		}
		if !hasFinalizer(w.claim().Finalizers, provisioning.ClaimFinalizer) {
			return "no finalizer"
		}
		return ""
	})
	c := w.claim()
	c.DeletionTimestamp = &metav1.Time{Time: time.Now()}
	if _, err := w.client.CoreV1().PersistentVolumeClaims("ns").Update(w.ctx, c, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	w.eventually("backend volume deleted, finalizer gone", func() string {
		if b := w.backend(); len(b) != 0 {
			return fmt.Sprintf("backend %v", b)
		}
		if hasFinalizer(w.claim().Finalizers, provisioning.ClaimFinalizer) {
			return "finalizer still there"
		}
		return ""
	})
}

// A final error for a claim on a selected node removes the node, so the
// scheduler chooses again; nothing is made and no finalizer is left.
func TestFinalErrorRemovesSelectedNode(t *testing.T) {
	rwx := func(c *v1.PersistentVolumeClaim) {
		c.Spec.AccessModes = []v1.PersistentVolumeAccessMode{v1.ReadWriteMany}
	}
	w := newWorld(t, claim(selectedNode("b"), rwx), class(waitForConsumer))
	w.start()
	w.eventually("selected node removed", func() string {
		c := w.claim()
		switch {
		case c.Annotations[annSelectedNode] != "":
			return "selected-node still " + c.Annotations[annSelectedNode]
		case hasFinalizer(c.Finalizers, provisioning.ClaimFinalizer):
			return "finalizer left"
		case !w.sawEvent(`Warning ProvisioningFailed `):
			return fmt.Sprintf("events %v", w.events)
		}
		return ""
	})
	if b := w.backend(); len(b) != 0 || w.pv("pvc-uid-1") != nil {
		t.Errorf("backend %v, PV %v; want nothing", b, w.pv("pvc-uid-1"))
	}
}

// A provisioner that crashed after the PV create finds the PV and only
// drops the finalizer: no second CreateVolume.
func TestExistingPVOnlyDropsTheFinalizer(t *testing.T) {
	made := provisioning.BuildVolume(claim(), class(), testDriver, &v1csiVolume)
	w := newWorld(t, claim(withFinalizer), class(), made)
	w.start()
	w.eventually("finalizer gone", func() string {
		if hasFinalizer(w.claim().Finalizers, provisioning.ClaimFinalizer) {
			return "finalizer still there"
		}
		return ""
	})
	if b := w.backend(); len(b) != 0 {
		t.Errorf("backend %v: CreateVolume was called again", b)
	}
}

// A released PV under Delete: the backend volume goes (NotFound counts as
// gone), then the PV.
func TestReleasedVolumeIsDeleted(t *testing.T) {
	w := newWorld(t, claim(), class())
	w.start()
	w.eventually("provisioned", func() string {
		if w.pv("pvc-uid-1") == nil || len(w.backend()) != 1 {
			return "not yet"
		}
		return ""
	})
	pv := w.pv("pvc-uid-1")
	pv.Status.Phase = v1.VolumeReleased
	if _, err := w.client.CoreV1().PersistentVolumes().UpdateStatus(w.ctx, pv, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	w.eventually("backend volume and PV deleted", func() string {
		if b := w.backend(); len(b) != 0 {
			return fmt.Sprintf("backend %v", b)
		}
		if w.pv("pvc-uid-1") != nil {
			return "PV still there"
		}
		return ""
	})

	gone := provisioning.BuildVolume(claim(), class(), testDriver, &csipb.Volume{VolumeId: "no-such-volume",
		AccessibleTopology: []*csipb.Topology{{Segments: map[string]string{topoKey: "a"}}}})
	gone.Name = "pvc-gone"
	gone.Status.Phase = v1.VolumeReleased
	if _, err := w.client.CoreV1().PersistentVolumes().Create(w.ctx, gone, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w.eventually("PV whose backend volume is gone deleted", func() string {
		if w.pv("pvc-gone") != nil {
			return "PV still there"
		}
		return ""
	})
}

// Retain PVs of ours lose the finalizer and are never deleted.
func TestRetainedVolumeKeepsItsBackend(t *testing.T) {
	w := newWorld(t)
	made, err := w.pool.ForSegment(testDriver, map[string]string{topoKey: "a"}).CreateVolume(w.ctx, fillerRequest(1<<20))
	if err != nil {
		t.Fatal(err)
	}
	retained := provisioning.BuildVolume(claim(), class(), testDriver, made)
	retained.Spec.PersistentVolumeReclaimPolicy = v1.PersistentVolumeReclaimRetain
	retained.Status.Phase = v1.VolumeReleased
	if _, err := w.client.CoreV1().PersistentVolumes().Create(w.ctx, retained, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w.start()
	w.eventually("finalizer removed", func() string {
		pv := w.pv(retained.Name)
		if pv == nil {
			return "PV deleted"
		}
		if hasFinalizer(pv.Finalizers, provisioning.VolumeFinalizer) {
			return "finalizer still there"
		}
		return ""
	})
	time.Sleep(500 * time.Millisecond) // a few resyncs of the provisioner
	if b := w.backend(); len(b) != 1 || w.pv(retained.Name) == nil {
		t.Errorf("backend %v, PV %v: a Retain volume must keep both", b, w.pv(retained.Name))
	}
}

// A VolumeSnapshot of another API group is refused with the reference's
// reason, and nothing is made.
func TestUnsupportedDataSourceIsNamed(t *testing.T) {
	snap := func(c *v1.PersistentVolumeClaim) {
		c.Spec.DataSource = &v1.TypedLocalObjectReference{Kind: "VolumeSnapshot", Name: "snap", APIGroup: ptr.To("example.io")}
	}
	w := newWorld(t, claim(snap), class())
	w.start()
	w.eventually("ProvisioningFailed naming the source", func() string {
		if !w.sawEvent(`Warning ProvisioningFailed the PVC source does not belong to the right APIGroup. Expected snapshot.storage.k8s.io, Got example.io`) {
			return fmt.Sprintf("events %v", w.events)
		}
		return ""
	})
	if b := w.backend(); len(b) != 0 || hasFinalizer(w.claim().Finalizers, provisioning.ClaimFinalizer) {
		t.Errorf("backend %v finalizers %v; want nothing", b, w.claim().Finalizers)
	}
}

// The first attempt's CreateVolume succeeded on one node, its PV create
// failed, and then that node left the node list (or the list changed the
// claim's preferred node): the retry asks the endpoint the first attempt
// asked, named on the claim, so exactly one backend volume exists and the
// PV is accessible where it lives.
func TestRetryAfterTheNodesChangedAsksTheSameEndpoint(t *testing.T) {
	w := newWorld(t, claim(), class())
	var refuse atomic.Bool
	refuse.Store(true)
	w.client.PrependReactor("create", "persistentvolumes", func(k8stesting.Action) (bool, runtime.Object, error) {
		if refuse.Load() {
			return true, nil, errors.New("injected: PV create refused")
		}
		return false, nil, nil
	})
	w.start()
	var first string
	w.eventually("one backend volume, the claim pinned to its node", func() string {
		b, c := w.backend(), w.claim()
		switch {
		case len(b) != 1:
			return fmt.Sprintf("backend %v", b)
		case !hasFinalizer(c.Finalizers, provisioning.ClaimFinalizer):
			return "no in-progress finalizer"
		case c.Annotations[provisioning.AnnEndpointNode]+"/" != b[0][:len(c.Annotations[provisioning.AnnEndpointNode])+1]:
			return fmt.Sprintf("pinned to %q, volume %s", c.Annotations[provisioning.AnnEndpointNode], b[0])
		}
		first = c.Annotations[provisioning.AnnEndpointNode]
		return ""
	})
	if err := w.client.CoreV1().Nodes().Delete(w.ctx, first, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond) // a few retries against the changed node list
	refuse.Store(false)
	w.eventually("PV made, finalizer and pin gone", func() string {
		c := w.claim()
		switch {
		case w.pv("pvc-uid-1") == nil:
			return "no PV"
		case hasFinalizer(c.Finalizers, provisioning.ClaimFinalizer) || c.Annotations[provisioning.AnnEndpointNode] != "":
			return fmt.Sprintf("finalizers %v annotations %v", c.Finalizers, c.Annotations)
		}
		return ""
	})
	if b := w.backend(); len(b) != 1 || !strings.HasPrefix(b[0], first+"/") {
		t.Errorf("backend %v, want one volume on node %s", b, first)
	}
	terms := w.pv("pvc-uid-1").Spec.NodeAffinity.Required.NodeSelectorTerms
	if got := terms[0].MatchExpressions[0].Values; len(got) != 1 || got[0] != first {
		t.Errorf("PV accessible from %v, want [%s]", got, first)
	}
}

// An Immediate claim whose preferred node has no room is made on the next
// node that has, in one sync: ResourceExhausted, answered twice to the same
// request, means the full node made nothing, so the endpoint pin moves on
// with the request.
func TestFullPreferredNodeFallsBackToTheNextNode(t *testing.T) {
	big := func(c *v1.PersistentVolumeClaim) {
		c.Spec.Resources.Requests[v1.ResourceStorage] = resource.MustParse("600Mi")
	}
	w := newWorld(t, claim(big), class())
	nodes := []string{"a", "b"}
	preferred, other := nodes[hashUID("uid-1")%2], nodes[1-hashUID("uid-1")%2]
	full := w.pool.ForSegment(testDriver, map[string]string{topoKey: preferred})
	if _, err := full.CreateVolume(w.ctx, fillerRequest(600<<20)); err != nil {
		t.Fatalf("fill node %s: %v", preferred, err)
	}
	w.start()
	w.eventually("provisioned on the other node", func() string {
		pv, c := w.pv("pvc-uid-1"), w.claim()
		switch {
		case pv == nil:
			return fmt.Sprintf("no PV; events %v", w.events)
		case hasFinalizer(c.Finalizers, provisioning.ClaimFinalizer) || c.Annotations[provisioning.AnnEndpointNode] != "":
			return "claim still pinned"
		}
		if got := pv.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions[0].Values; len(got) != 1 || got[0] != other {
			return fmt.Sprintf("PV accessible from %v, want [%s]", got, other)
		}
		return ""
	})
	if b := w.backend(); len(b) != 2 {
		t.Errorf("backend %v, want the filler and the claim's volume", b)
	}
	if w.sawEvent("Warning ProvisioningFailed") {
		t.Errorf("a node with room was left, yet: %v", w.events)
	}
}

func fillerRequest(bytes int64) *csipb.CreateVolumeRequest {
	return &csipb.CreateVolumeRequest{
		Name:          "filler",
		CapacityRange: &csipb.CapacityRange{RequiredBytes: bytes},
		VolumeCapabilities: []*csipb.VolumeCapability{{
			AccessType: &csipb.VolumeCapability_Mount{Mount: &csipb.VolumeCapability_MountVolume{}},
			AccessMode: &csipb.VolumeCapability_AccessMode{Mode: csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
		}},
	}
}

// A claim whose class appears only after it (no event tells the loop) is
// provisioned by the resync, which looks only at the objects not at rest
// (a bound claim beside it is at rest).
func TestResyncProvisionsAClaimWhoseClassCameLater(t *testing.T) {
	bound := claim(func(c *v1.PersistentVolumeClaim) {
		c.Name, c.UID, c.Spec.VolumeName, c.Status.Phase = "bound", "uid-bound", "static", v1.ClaimBound
	})
	w := newWorld(t, claim(), bound)
	c := w.start()
	// Created once the claim's first sync found no class (the queue drained
	// with the workers running).
	w.eventually("first syncs done", func() string {
		if !c.Ready() || c.queues.claims.Len() > 0 {
			return "claims still queued"
		}
		return ""
	})
	if _, err := w.client.StorageV1().StorageClasses().Create(w.ctx, class(), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w.eventually("PV made by the resync", func() string {
		if w.pv("pvc-uid-1") == nil {
			return "no PV"
		}
		return ""
	})
}
