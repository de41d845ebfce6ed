package provisioner

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/hostpath/hostpathtest"
	"github.com/volplane/volplane/internal/provisioning"
)

// tap sits in front of every node's driver: it records the calls and the
// secrets they carry, and may make CreateVolume answer ResourceExhausted
// after it made the volume (as a gRPC limit or a driver still finishing
// can), once per volume name.
type tap struct {
	mu          sync.Mutex
	exhaustOnce bool
	exhausted   map[string]bool
	creates     []string            // volume names, in call order
	secrets     map[string][]string // call ("CreateVolume pvc-..."/"DeleteVolume <id>") -> secret data as k=v
}

func newTap() *tap { return &tap{exhausted: map[string]bool{}, secrets: map[string][]string{}} }

func (p *tap) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	switch r := req.(type) {
	case *csipb.CreateVolumeRequest:
		resp, err := handler(ctx, req)
		p.mu.Lock()
		defer p.mu.Unlock()
		p.creates = append(p.creates, r.GetName())
		p.secrets["CreateVolume "+r.GetName()] = flat(r.GetSecrets())
		if err == nil && p.exhaustOnce && !p.exhausted[r.GetName()] {
			p.exhausted[r.GetName()] = true
			return nil, status.Error(codes.ResourceExhausted, "injected: answered after the volume was made")
		}
		return resp, err
	case *csipb.DeleteVolumeRequest:
		p.mu.Lock()
		p.secrets["DeleteVolume "+r.GetVolumeId()] = flat(r.GetSecrets())
		p.mu.Unlock()
	}
	return handler(ctx, req)
}

func (p *tap) creations() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.creates)
}

func (p *tap) secretsOf(call string) ([]string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	s, ok := p.secrets[call]
	return s, ok
}

func flat(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	return out
}

// newTappedWorld is newWorld with the tap in front of both nodes' drivers.
func newTappedWorld(t *testing.T, p *tap, objs ...runtime.Object) *world {
	t.Helper()
	w := newWorldOf(t, func(t testing.TB, node string, capacity int64) string {
		return hostpathtest.ServeIntercepted(t, node, capacity, p.intercept)
	}, objs...)
	// The fake API keeps resourceVersions as given; count them up on claim
	// writes, as the API server does, so that no sync mistakes an older
	// copy for the newest.
	var rv atomic.Int64
	rv.Store(100)
	w.client.PrependReactor("update", "persistentvolumeclaims", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if m, err := meta.Accessor(a.(k8stesting.UpdateAction).GetObject()); err == nil {
			m.SetResourceVersion(strconv.FormatInt(rv.Add(1), 10))
		}
		return false, nil, nil
	})
	return w
}

// eventOrder says what is wrong unless the events were recorded in this
// order (others may come between).
func (w *world) eventOrder(want ...string) string {
	w.sawEvent("") // drain
	i := 0
	for _, e := range w.events {
		if i < len(want) && strings.HasPrefix(e, want[i]) {
			i++
		}
	}
	if i < len(want) {
		return fmt.Sprintf("events %q, want in order %q", w.events, want)
	}
	return ""
}

const announced = `Normal Provisioning External provisioner is provisioning volume for claim "ns/data"`

// A claim with a label selector is refused as the external-provisioner
// refuses it: announced, then ProvisioningFailed with its message; the
// driver is never asked and the claim is retried.
func TestClaimWithSelectorIsRefused(t *testing.T) {
	p := newTap()
	w := newTappedWorld(t, p, claim(withSelector), class())
	w.start()
	w.eventually("refused", func() string {
		return w.eventOrder(announced, "Warning ProvisioningFailed claim Selector is not supported")
	})
	if n := p.creations(); n != 0 || len(w.backend()) != 0 || w.pv("pvc-uid-1") != nil {
		t.Errorf("CreateVolume called %d times, backend %v", n, w.backend())
	}
	if c := w.claim(); hasFinalizer(c.Finalizers, provisioning.ClaimFinalizer) {
		t.Errorf("finalizers %v", c.Finalizers)
	}
}

// A claim whose dataSourceRef names a populator's kind is left to the
// populator: announced, then the note, nothing made, no failure, and the
// selected node stays (the populator provisions there).
func TestPopulatorClaimIsLeftToItsPopulator(t *testing.T) {
	populated := func(c *v1.PersistentVolumeClaim) {
		c.Spec.DataSourceRef = &v1.TypedObjectReference{Kind: "Backup", Name: "nightly", APIGroup: ptr.To("example.io")}
	}
	p := newTap()
	w := newTappedWorld(t, p, claim(populated, selectedNode("a")), class(waitForConsumer))
	w.start()
	w.eventually("left to the populator", func() string {
		return w.eventOrder(announced, "Normal Provisioning Assuming an external populator will provision the volume")
	})
	c := w.claim()
	switch {
	case c.Annotations[annSelectedNode] != "a":
		t.Errorf("selected node %q, want a kept", c.Annotations[annSelectedNode])
	case hasFinalizer(c.Finalizers, provisioning.ClaimFinalizer):
		t.Errorf("finalizers %v", c.Finalizers)
	case p.creations() != 0 || w.pv("pvc-uid-1") != nil:
		t.Errorf("CreateVolume called %d times", p.creations())
	case w.sawEvent("Warning ProvisioningFailed"):
		t.Errorf("failure reported: %v", w.events)
	}
}

// The preferred node makes the volume but answers ResourceExhausted. Taking
// that answer as "nothing made" and moving on to the next node would make
// a second volume there and leak the first; asked again, the node returns
// the volume it made, which becomes the PV.
func TestOutOfRoomAnswerAfterTheVolumeWasMadeLeaksNothing(t *testing.T) {
	p := newTap()
	p.exhaustOnce = true
	w := newTappedWorld(t, p, claim(), class())
	nodes := []string{"a", "b"}
	preferred := nodes[hashUID("uid-1")%2]
	w.start()
	w.eventually("provisioned", func() string {
		c := w.claim()
		if w.pv("pvc-uid-1") == nil || hasFinalizer(c.Finalizers, provisioning.ClaimFinalizer) {
			return fmt.Sprintf("no PV yet; events %v", w.events)
		}
		return ""
	})
	if b := w.backend(); len(b) != 1 || !strings.HasPrefix(b[0], preferred+"/") {
		t.Errorf("backend %v, want the one volume on the preferred node %s", b, preferred)
	}
	if got := w.pv("pvc-uid-1").Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions[0].Values; got[0] != preferred {
		t.Errorf("PV on %v, want %s", got, preferred)
	}
}

// A selected node that has no room (the same answer twice) is given back
// to the scheduler as the external-provisioner does for a driver with
// topology: ProvisioningFailed with the driver's error, selected-node
// removed, and no in-progress finalizer, since nothing was made.
func TestOutOfRoomOnTheSelectedNodeAsksForAnotherNode(t *testing.T) {
	// Node a's driver holds a volume of half its capacity, so a claim of
	// three quarters fits the driver but not what is left.
	larger := func(c *v1.PersistentVolumeClaim) {
		c.Spec.Resources.Requests[v1.ResourceStorage] = resource.MustParse("768Mi")
	}
	w := newTappedWorld(t, newTap(), claim(larger, selectedNode("a")), class(waitForConsumer))
	filler := w.fill("a", 512<<20)
	w.start()
	w.eventually("rescheduled", func() string {
		c := w.claim()
		switch {
		case c.Annotations[annSelectedNode] != "":
			return "selected node still " + c.Annotations[annSelectedNode]
		case hasFinalizer(c.Finalizers, provisioning.ClaimFinalizer) || c.Annotations[provisioning.AnnEndpointNode] != "":
			return fmt.Sprintf("still pinned: %v %v", c.Finalizers, c.Annotations)
		}
		return w.eventOrder(announced, "Warning ProvisioningFailed rpc error: code = ResourceExhausted desc = ")
	})
	if b := w.backend(); len(b) != 1 || b[0] != filler {
		t.Errorf("backend %v, want only %s", b, filler)
	}
}

// fill makes a volume of size bytes on node's driver and returns it as
// backend lists it.
func (w *world) fill(node string, size int64) string {
	w.t.Helper()
	for _, e := range w.pool.Endpoints(testDriver) {
		if e.Info.NodeID != node {
			continue
		}
		vol, err := e.CreateVolume(w.ctx, &csipb.CreateVolumeRequest{Name: "filler-" + node,
			CapacityRange: &csipb.CapacityRange{RequiredBytes: size},
			VolumeCapabilities: []*csipb.VolumeCapability{{
				AccessMode: &csipb.VolumeCapability_AccessMode{Mode: csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
				AccessType: &csipb.VolumeCapability_Mount{Mount: &csipb.VolumeCapability_MountVolume{}}}}})
		if err != nil {
			w.t.Fatal(err)
		}
		return node + "/" + vol.GetVolumeId()
	}
	w.t.Fatalf("no endpoint of node %s", node)
	return ""
}

// The class names a provisioner secret (templated from the claim) and node
// publish/stage secrets: CreateVolume gets the provisioner secret's data,
// the driver never sees the reserved keys, the PV records the refs, and
// DeleteVolume of the released PV gets the secret again.
func TestClassSecretsReachTheDriverAndThePV(t *testing.T) {
	secret := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "data-creds"}, Data: map[string][]byte{"token": []byte("s3cr3t")}}
	withSecrets := func(c *storagev1.StorageClass) {
		c.Parameters = map[string]string{"kind": "ssd",
			reservedPrefix + "provisioner-secret-name": "${pvc.name}-creds", reservedPrefix + "provisioner-secret-namespace": "${pvc.namespace}",
			reservedPrefix + "secret-name": "mount-creds", reservedPrefix + "secret-namespace": "kube-system"}
	}
	p := newTap()
	w := newTappedWorld(t, p, claim(), class(withSecrets), secret)
	w.start()
	w.eventually("provisioned", func() string {
		if w.pv("pvc-uid-1") == nil {
			return fmt.Sprintf("no PV; events %v", w.events)
		}
		return ""
	})
	if got, _ := p.secretsOf("CreateVolume pvc-uid-1"); fmt.Sprint(got) != "[token=s3cr3t]" {
		t.Errorf("CreateVolume secrets %v", got)
	}
	pv := w.pv("pvc-uid-1")
	mount := &v1.SecretReference{Name: "mount-creds", Namespace: "kube-system"}
	src := pv.Spec.CSI
	for name, ref := range map[string]*v1.SecretReference{"nodeStage": src.NodeStageSecretRef, "nodePublish": src.NodePublishSecretRef,
		"controllerPublish": src.ControllerPublishSecretRef, "controllerExpand": src.ControllerExpandSecretRef, "nodeExpand": src.NodeExpandSecretRef} {
		if ref == nil || *ref != *mount {
			t.Errorf("%s secret ref %v, want %v", name, ref, mount)
		}
	}
	if pv.Annotations[annDeletionSecretName] != "data-creds" || pv.Annotations[annDeletionSecretNamespace] != "ns" {
		t.Errorf("deletion annotations %v", pv.Annotations)
	}
	pv.Status.Phase = v1.VolumeReleased
	if _, err := w.client.CoreV1().PersistentVolumes().UpdateStatus(w.ctx, pv, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	w.eventually("deleted with the secret", func() string {
		got, ok := p.secretsOf("DeleteVolume " + pv.Spec.CSI.VolumeHandle)
		if !ok || len(w.backend()) != 0 {
			return fmt.Sprintf("backend %v", w.backend())
		}
		if fmt.Sprint(got) != "[token=s3cr3t]" {
			return fmt.Sprintf("DeleteVolume secrets %v", got)
		}
		return ""
	})
}

// A provisioner secret that does not exist fails provisioning with the
// reference's error before the driver is asked.
func TestMissingProvisionerSecretFailsProvisioning(t *testing.T) {
	withSecret := func(c *storagev1.StorageClass) {
		c.Parameters = map[string]string{reservedPrefix + "provisioner-secret-name": "nope", reservedPrefix + "provisioner-secret-namespace": "ns"}
	}
	p := newTap()
	w := newTappedWorld(t, p, claim(), class(withSecret))
	w.start()
	w.eventually("ProvisioningFailed", func() string {
		return w.eventOrder(announced, `Warning ProvisioningFailed error getting secret nope in namespace ns: secrets "nope" not found`)
	})
	if n := p.creations(); n != 0 || hasFinalizer(w.claim().Finalizers, provisioning.ClaimFinalizer) {
		t.Errorf("CreateVolume called %d times; finalizers %v", n, w.claim().Finalizers)
	}
}

// A claim deleted while its volume may exist is cleaned up by asking for
// the volume again; a driver that makes it and answers ResourceExhausted
// is asked once more, and the volume it returns is deleted before the
// finalizer goes.
func TestCleanupAfterAnOutOfRoomAnswerDeletesTheVolumeMade(t *testing.T) {
	p := newTap()
	p.exhaustOnce = true
	w := newTappedWorld(t, p, claim(withFinalizer, deleting), class())
	w.start()
	w.eventually("volume deleted and finalizer gone", func() string {
		if b := w.backend(); len(b) != 0 {
			return fmt.Sprintf("backend %v", b)
		}
		if hasFinalizer(w.claim().Finalizers, provisioning.ClaimFinalizer) {
			return "finalizer still there"
		}
		return ""
	})
	if p.creations() < 2 {
		t.Errorf("CreateVolume called %d times, want the answer confirmed", p.creations())
	}
}

// Deleting a PV finds the provisioner secret as the external-provisioner
// does: from the PV's annotations when it has both, else from its class.
func TestDeletionSecretsFromAnnotationsOrClass(t *testing.T) {
	secret := &v1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "data-creds"}, Data: map[string][]byte{"k": []byte("v")}}
	templated := class(func(c *storagev1.StorageClass) {
		c.Parameters = map[string]string{reservedPrefix + "provisioner-secret-name": "${pvc.name}-creds", reservedPrefix + "provisioner-secret-namespace": "${pvc.namespace}"}
	})
	byAnnotation := class(func(c *storagev1.StorageClass) {
		c.Name = "annotated"
		c.Parameters = map[string]string{reservedPrefix + "provisioner-secret-name": "${pvc.annotations['k']}", reservedPrefix + "provisioner-secret-namespace": "ns"}
	})
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{})
	for _, sc := range []*storagev1.StorageClass{templated, byAnnotation} {
		if err := indexer.Add(sc); err != nil {
			t.Fatal(err)
		}
	}
	c := &Controller{client: fake.NewClientset(secret), read: reads{classes: storagelisters.NewStorageClassLister(indexer)}}
	pv := func(className string, ann map[string]string) *v1.PersistentVolume {
		out := provisioning.BuildVolume(claim(), class(), testDriver, &v1csiVolume)
		out.Spec.StorageClassName = className
		maps.Copy(out.Annotations, ann)
		return out
	}
	cases := []struct {
		name    string
		pv      *v1.PersistentVolume
		want    string
		wantErr bool
	}{
		{"annotations name the secret", pv("gone", map[string]string{annDeletionSecretName: "data-creds", annDeletionSecretNamespace: "ns"}), "map[k:v]", false},
		{"empty annotations: none, whatever the class", pv("fast", map[string]string{annDeletionSecretName: "", annDeletionSecretNamespace: ""}), "map[]", false},
		{"no annotations: the class's templates", pv("fast", nil), "map[k:v]", false},
		{"no annotations, class gone: none", pv("gone", nil), "map[]", false},
		{"secret gone: deleted without", pv("x", map[string]string{annDeletionSecretName: "absent", annDeletionSecretNamespace: "ns"}), "map[]", false},
		{"template the claimRef cannot resolve", pv("annotated", nil), "", true},
	}
	for _, tc := range cases {
		got, err := c.deletionSecrets(context.Background(), tc.pv)
		if (err != nil) != tc.wantErr || (!tc.wantErr && fmt.Sprint(got) != tc.want) {
			t.Errorf("%s: %v, %v; want %s (error %v)", tc.name, got, err, tc.want, tc.wantErr)
		}
	}
}
