package provisioner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/csi"
	"github.com/volplane/volplane/internal/hostpath/hostpathtest"
	"github.com/volplane/volplane/internal/provisioning"
)

// Issue 23: nothing a namespace user writes on their own claim makes the
// provisioner act on another tenant's volume, or outside what the class
// and the claim give.

// The reproduced bug: a claim of a class that does not exist, carrying by
// hand the in-progress finalizer, a pin and a recorded request naming
// another claim's volume, is deleted. The forged request is never
// replayed: the other claim's volume stays.
func TestForgedRequestNamingAnotherClaimsVolumeIsNeverReplayed(t *testing.T) {
	victim := fillerRequest(1 << 20)
	victim.Name = "pvc-victim"
	forged := `{"name":"pvc-victim","capacityRange":{"requiredBytes":"1"},"volumeCapabilities":[{"mount":{},"accessMode":{"mode":"SINGLE_NODE_WRITER"}}]}`
	w := newWorld(t, claim(withFinalizer, deleting, pinnedTo("a"), func(c *v1.PersistentVolumeClaim) {
		c.Spec.StorageClassName = ptr.To("no-such-class")
		c.Annotations[provisioning.AnnCreateRequest] = forged
	}))
	vol := w.createOn("a", victim)
	w.start()
	w.eventually("the forged record rejected", func() string {
		if !w.sawEvent("Warning " + provisioning.EventRecordRejected + " ") {
			return fmt.Sprintf("events %v, backend %v", w.events, w.backend())
		}
		return ""
	})
	w.eventually("the claim's own cleanup done", func() string {
		if provisioning.MarkedInProgress(w.claim()) {
			return fmt.Sprintf("claim %v, events %v", w.claim().Annotations, w.events)
		}
		return ""
	})
	if b := w.backend(); !slices.Equal(b, []string{"a/" + vol.GetVolumeId()}) {
		t.Errorf("backend %v, want the other claim's volume kept and nothing else", b)
	}
}

// A pin written by hand on a new claim, to a node the class's
// allowedTopologies forbid, is ignored and replaced: the volume is made
// where the class allows.
func TestForgedPinOutsideTheClassTopologyIsReplaced(t *testing.T) {
	onlyA := func(c *storagev1.StorageClass) {
		c.AllowedTopologies = []v1.TopologySelectorTerm{{MatchLabelExpressions: []v1.TopologySelectorLabelRequirement{
			{Key: topoKey, Values: []string{"a"}}}}}
	}
	w := newWorld(t, claim(pinnedTo("b")), class(onlyA))
	w.start()
	w.expectProvisionedOn("a")
}

// A pin written by hand on a claim the scheduler placed on node a, naming
// node b, is ignored and replaced: the volume is made on the selected node.
func TestForgedPinOffTheSelectedNodeIsReplaced(t *testing.T) {
	w := newWorld(t, claim(selectedNode("a"), pinnedTo("b")), class(waitForConsumer))
	w.start()
	w.expectProvisionedOn("a")
}

func (w *world) expectProvisionedOn(node string) {
	w.t.Helper()
	w.eventually("provisioned", func() string {
		if w.pv("pvc-uid-1") == nil || provisioning.MarkedInProgress(w.claim()) {
			return fmt.Sprintf("no PV yet; events %v", w.events)
		}
		return ""
	})
	if b := w.backend(); len(b) != 1 || !strings.HasPrefix(b[0], node+"/") {
		w.t.Errorf("backend %v, want the one volume on node %s", b, node)
	}
	if !w.sawEvent("Warning " + provisioning.EventRecordRejected + " ") {
		w.t.Errorf("the ignored pin was not reported: %v", w.events)
	}
}

// A clone source is used only when its PV is bound back to the source
// claim: a claim whose spec.volumeName names a PV bound to someone else
// (here a user's pre-bound claim pointing at another tenant's volume, or a
// half-done bind) is not a way to copy that volume.
func TestCloneSourceNotBoundBackIsRefused(t *testing.T) {
	w := newWorld(t, class())
	other := w.createOn("a", fillerRequest(1<<20))
	otherPV := provisioning.BuildVolume(claim(func(c *v1.PersistentVolumeClaim) {
		c.Namespace, c.Name, c.UID = "victims", "secret", "uid-victim"
	}), class(), testDriver, &csipb.Volume{VolumeId: other.GetVolumeId(), AccessibleTopology: other.GetAccessibleTopology()})
	otherPV.Name = "pv-victim"
	otherPV.Status.Phase = v1.VolumeBound
	src := claim(func(c *v1.PersistentVolumeClaim) {
		c.Name, c.UID = "src", "uid-src"
		c.Spec.VolumeName = "pv-victim"
		c.Status.Phase = v1.ClaimBound
	})
	clone := claim(func(c *v1.PersistentVolumeClaim) {
		c.Spec.DataSource = &v1.TypedLocalObjectReference{Kind: "PersistentVolumeClaim", Name: "src"}
	})
	for _, obj := range []any{otherPV, src, clone} {
		var err error
		switch o := obj.(type) {
		case *v1.PersistentVolume:
			_, err = w.client.CoreV1().PersistentVolumes().Create(w.ctx, o, metav1.CreateOptions{})
		case *v1.PersistentVolumeClaim:
			_, err = w.client.CoreV1().PersistentVolumeClaims(o.Namespace).Create(w.ctx, o, metav1.CreateOptions{})
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	w.start()
	w.eventually("refused", func() string {
		if !w.sawEvent(`Warning ProvisioningFailed volume "pv-victim" of data source claim "src" is not bound to it`) {
			return fmt.Sprintf("events %v, backend %v", w.events, w.backend())
		}
		return ""
	})
	if b := w.backend(); len(b) != 1 || w.pv("pvc-uid-1") != nil {
		t.Errorf("backend %v, PV %v: the other tenant's volume was cloned", b, w.pv("pvc-uid-1"))
	}
}

// kubernetes/kubernetes#77988: a claim without pvc-protection goes away
// while its CreateVolume is in flight, and the driver's answer is lost (a
// timeout) although it made the volume. The plan kept in memory cleans it
// up from the delete event.
func TestClaimGoneWhileItsCreateTimedOutLeavesNoVolume(t *testing.T) {
	var w *world
	var once atomic.Bool
	lost := func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		r, ok := req.(*csipb.CreateVolumeRequest)
		if !ok || r.GetName() != "pvc-uid-1" || once.Swap(true) {
			return handler(ctx, req)
		}
		if _, err := handler(ctx, req); err != nil {
			return nil, err
		}
		// The claim goes with nothing holding it (the fake API ignores
		// finalizers, as the API server does for a delete that raced the
		// finalizer's write).
		if err := w.client.CoreV1().PersistentVolumeClaims("ns").Delete(context.Background(), "data", metav1.DeleteOptions{}); err != nil {
			return nil, err
		}
		return nil, status.Error(codes.DeadlineExceeded, "injected: the answer was lost")
	}
	w = newWorldOf(t, func(t testing.TB, node string, capacity int64) string {
		return hostpathtest.ServeIntercepted(t, node, capacity, lost)
	}, claim(), class())
	w.start()
	w.eventually("the volume made", func() string {
		if _, err := w.client.CoreV1().PersistentVolumeClaims("ns").Get(w.ctx, "data", metav1.GetOptions{}); err == nil {
			return "claim still there"
		}
		return ""
	})
	w.eventually("the volume cleaned up", func() string {
		if b := w.backend(); len(b) != 0 {
			return fmt.Sprintf("backend %v", b)
		}
		return ""
	})
}

// A Retain PV of ours switched back to Delete gets the finalizer back, so
// that a later delete of the PV goes through the provisioner.
func TestRetainSwitchedBackToDeleteGetsTheFinalizerBack(t *testing.T) {
	pv := provisioning.BuildVolume(claim(), class(), testDriver, &v1csiVolume)
	pv.Finalizers = nil
	pv.Status.Phase = v1.VolumeBound
	w := newWorld(t, pv)
	w.start()
	w.eventually("finalizer back", func() string {
		if p := w.pv(pv.Name); !hasFinalizer(p.Finalizers, provisioning.VolumeFinalizer) {
			return fmt.Sprintf("finalizers %v", p.Finalizers)
		}
		return ""
	})
}

// A Released PV under Delete whose node affinity names only
// kubernetes.io/hostname, a key the driver does not report: which node's
// driver holds the volume cannot be told, so nothing is deleted and the
// PV says why (the first endpoint would have answered OK for an ID it
// never made, and the PV would have gone while the data stayed).
func TestVolumeWithAffinityOnNoDriverKeyIsNotDeletedThroughTheFirstEndpoint(t *testing.T) {
	w := newWorld(t)
	made := w.createOn("b", fillerRequest(1<<20))
	pv := provisioning.BuildVolume(claim(), class(), testDriver, made)
	pv.Spec.NodeAffinity = &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
		MatchExpressions: []v1.NodeSelectorRequirement{{Key: v1.LabelHostname, Operator: v1.NodeSelectorOpIn, Values: []string{"b"}}}}}}}
	pv.Status.Phase = v1.VolumeReleased
	if _, err := w.client.CoreV1().PersistentVolumes().Create(w.ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w.start()
	w.eventually("VolumeFailedDelete", func() string {
		if !w.sawEvent("Warning VolumeFailedDelete cannot delete volume " + made.GetVolumeId() + ": the volume's node affinity names none of the topology keys") {
			return fmt.Sprintf("events %v", w.events)
		}
		return ""
	})
	if b := w.backend(); len(b) != 1 || w.pv(pv.Name) == nil {
		t.Errorf("backend %v, PV %v: want both kept", b, w.pv(pv.Name))
	}
}

// A deleted claim whose pin names a node the class does not allow: no
// attempt asked there, so nothing is asked there; the finalizer stays, and
// the Warning says why and what to do.
func TestCleanupNeverAsksAPinOutsideTheClassTopology(t *testing.T) {
	onlyA := func(c *storagev1.StorageClass) {
		c.AllowedTopologies = []v1.TopologySelectorTerm{{MatchLabelExpressions: []v1.TopologySelectorLabelRequirement{
			{Key: topoKey, Values: []string{"a"}}}}}
	}
	p := newTap()
	w := newTappedWorld(t, p, claim(withFinalizer, deleting, pinnedTo("b")), class(onlyA))
	w.start()
	w.eventually("ProvisioningCleanupFailed", func() string {
		if !w.sawEvent(`Warning ProvisioningCleanupFailed failed to delete the volume that may have been provisioned for the claim: the endpoint pin ` + provisioning.AnnEndpointNode + `="b"`) {
			return fmt.Sprintf("events %v", w.events)
		}
		return ""
	})
	if n := p.creations(); n != 0 || !hasFinalizer(w.claim().Finalizers, provisioning.ClaimFinalizer) {
		t.Errorf("CreateVolume called %d times, finalizers %v", n, w.claim().Finalizers)
	}
}

// A request recorded by hand on a new claim, before the provisioner's
// first attempt, is replaced by the provisioner's own: a later cleanup
// replays only what was sent.
func TestForgedRecordOnANewClaimIsReplaced(t *testing.T) {
	forged := `{"name":"pvc-victim","capacityRange":{"requiredBytes":"1"}}`
	w := newWorld(t, claim(func(c *v1.PersistentVolumeClaim) { c.Annotations[provisioning.AnnCreateRequest] = forged }), class())
	var recorded string
	w.client.PrependReactor("create", "persistentvolumes", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("injected: PV create refused")
	})
	w.start()
	w.eventually("the provisioner's own request recorded", func() string {
		c := w.claim()
		recorded = c.Annotations[provisioning.AnnCreateRequest]
		if req, ok, err := provisioning.RecordedRequest(c); err != nil || !ok || req.GetName() != "pvc-uid-1" {
			return fmt.Sprintf("record %s", recorded)
		}
		return ""
	})
}

// In node deployment, a pin written by hand naming node b on a claim the
// scheduler placed on node a: node b's provisioner, to which the pin hands
// the claim, ignores and removes it, and node a's provisions on a.
func TestForgedPinInNodeDeploymentGoesToTheSelectedNode(t *testing.T) {
	w := newWorld(t, claim(selectedNode("a"), pinnedTo("b")), class(waitForConsumer))
	for _, e := range w.pool.Endpoints(testDriver) {
		factory := informers.NewSharedInformerFactory(w.client, 0)
		c, err := New(Config{Client: w.client, Informers: factory, Pool: csi.NewPool(e), Workers: 1, ResyncPeriod: 200 * time.Millisecond,
			Recorder:       func(string) record.EventRecorder { return w.recorder },
			NodeDeployment: &NodeDeployment{NodeName: e.Info.NodeID, BaseDelay: time.Millisecond, MaxDelay: time.Millisecond}})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(w.ctx)
		done := make(chan error, 1)
		factory.Start(ctx.Done())
		go func() { done <- c.Run(ctx) }()
		t.Cleanup(func() { cancel(); <-done; factory.Shutdown() })
	}
	w.expectProvisionedOn("a")
}
