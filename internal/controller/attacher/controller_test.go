package attacher

import (
	"context"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/attachment"
	"github.com/volplane/volplane/internal/csi"
)

// Fast edge cases against the fake clientset. No case here reaches a CSI
// call: the endpoints are probe results only (test/e2e/attacher calls a
// real driver).

const drv = "d.csi.test"

func newTest(t *testing.T, publish bool, objs ...runtime.Object) (*Controller, *fake.Clientset) {
	t.Helper()
	client := fake.NewClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	pool := csi.NewPool(&csi.Endpoint{Info: csi.Info{Driver: drv, Publish: publish}})
	c, err := New(Config{Client: client, Informers: factory, Pool: pool})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	client.ClearActions()
	return c, client
}

func testVA(mods ...func(*storagev1.VolumeAttachment)) *storagev1.VolumeAttachment {
	va := &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "va1", ResourceVersion: "1"},
		Spec: storagev1.VolumeAttachmentSpec{Attacher: drv, NodeName: "node1",
			Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To("pv1")}}}
	for _, m := range mods {
		m(va)
	}
	return va
}

func testPV(mods ...func(*v1.PersistentVolume)) *v1.PersistentVolume {
	pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv1"}, Spec: v1.PersistentVolumeSpec{
		AccessModes:            []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
		PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: drv, VolumeHandle: "h"}}}}
	for _, m := range mods {
		m(pv)
	}
	return pv
}

func writes(client *fake.Clientset) []string {
	var out []string
	for _, a := range client.Actions() {
		if a.GetVerb() != "get" && a.GetVerb() != "list" && a.GetVerb() != "watch" {
			out = append(out, a.GetVerb()+" "+a.GetResource().Resource+"/"+a.GetSubresource())
		}
	}
	return out
}

func TestAttachmentOfADriverWithoutPublishIsOneStatusWrite(t *testing.T) {
	c, client := newTest(t, false, testVA(), testPV())
	if _, err := c.syncAttachment(context.Background(), "va1"); err != nil {
		t.Fatal(err)
	}
	if got := writes(client); !slices.Equal(got, []string{"patch volumeattachments/status"}) {
		t.Fatalf("writes %v", got)
	}
	va, _ := client.StorageV1().VolumeAttachments().Get(context.Background(), "va1", metav1.GetOptions{})
	if !va.Status.Attached || len(va.Finalizers) != 0 {
		t.Errorf("attachment %+v", va)
	}
	// Synced again once the cache saw the write, it writes nothing more.
	// (The fake clientset keeps resourceVersions, so our newer copy cannot
	// be told from the cache's; the real API server's e2e covers that.)
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(5 * time.Millisecond) {
		if cached, _ := c.vas.Get("va1"); cached.Status.Attached {
			break
		}
	}
	client.ClearActions()
	if _, err := c.syncAttachment(context.Background(), "va1"); err != nil || len(writes(client)) != 0 {
		t.Errorf("second sync: %v, writes %v", err, writes(client))
	}
}

func TestAttachmentOfAnotherDriverIsLeftAlone(t *testing.T) {
	c, client := newTest(t, true, testVA(func(va *storagev1.VolumeAttachment) { va.Spec.Attacher = "other" }), testPV())
	if _, err := c.syncAttachment(context.Background(), "va1"); err != nil || len(writes(client)) != 0 {
		t.Errorf("sync: %v, writes %v", err, writes(client))
	}
}

func TestMissingCSINodeIsSavedAsTheAttachError(t *testing.T) {
	protected := func(pv *v1.PersistentVolume) { pv.Finalizers = []string{attachment.Finalizer(drv)} }
	c, client := newTest(t, true, testVA(), testPV(protected))
	_, err := c.syncAttachment(context.Background(), "va1")
	if err == nil {
		t.Fatal("no error to back off on")
	}
	want := []string{"patch volumeattachments/status"}
	if got := writes(client); !slices.Equal(got, want) {
		t.Fatalf("writes %v, want %v", got, want)
	}
	va, _ := client.StorageV1().VolumeAttachments().Get(context.Background(), "va1", metav1.GetOptions{})
	if ae := va.Status.AttachError; ae == nil || ae.Message != `csinode.storage.k8s.io "node1" not found` || ae.ErrorCode != nil {
		t.Errorf("attachError %+v", ae)
	}
}

func TestOwnErrorReportsDoNotWakeTheAttachment(t *testing.T) {
	c, _ := newTest(t, true)
	old := testVA()
	withErr := old.DeepCopy()
	withErr.ResourceVersion = "2"
	withErr.Status.AttachError = &storagev1.VolumeError{Message: "x"}
	c.onAttachmentUpdate(old, withErr)
	if c.vaQ.Len() != 0 {
		t.Error("an attachError update queued the attachment")
	}
	moved := withErr.DeepCopy()
	moved.ResourceVersion = "3"
	moved.DeletionTimestamp = &metav1.Time{}
	c.onAttachmentUpdate(withErr, moved)
	if c.vaQ.Len() != 1 {
		t.Error("a deletion did not queue the attachment")
	}
}

func TestPVFinalizerGoesOnlyWhenNoAttachmentNamesThePV(t *testing.T) {
	deleting := func(pv *v1.PersistentVolume) {
		pv.DeletionTimestamp = &metav1.Time{}
		pv.Finalizers = []string{"kubernetes.io/pv-protection", attachment.Finalizer(drv)}
	}
	c, client := newTest(t, true, testPV(deleting), testVA())
	if _, err := c.syncVolume(context.Background(), "pv1"); err != nil || len(writes(client)) != 0 {
		t.Fatalf("named PV: %v, writes %v", err, writes(client))
	}
	c, client = newTest(t, true, testPV(deleting))
	if _, err := c.syncVolume(context.Background(), "pv1"); err != nil {
		t.Fatal(err)
	}
	var patch string
	for _, a := range client.Actions() {
		if p, ok := a.(k8stesting.PatchAction); ok {
			patch = string(p.GetPatch())
		}
	}
	want := `[{"op":"test","path":"/metadata/finalizers/1","value":"external-attacher/d-csi-test"},{"op":"remove","path":"/metadata/finalizers/1"}]`
	if patch != want {
		t.Errorf("patch %s\nwant  %s", patch, want)
	}
}

// In node deployment the loop handles its own node's attachments alone:
// another node's is neither queued, nor synced, nor woken by that node's
// CSINode, nor revisited by the resync.
func TestNodeDeploymentLeavesAnotherNodesAttachmentAlone(t *testing.T) {
	other := testVA(func(va *storagev1.VolumeAttachment) { va.Name, va.Spec.NodeName = "va2", "node2" })
	client := fake.NewClientset(testVA(), other, testPV(),
		&storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "node2"}})
	factory := informers.NewSharedInformerFactory(client, 0)
	pool := csi.NewPool(&csi.Endpoint{Info: csi.Info{Driver: drv, Publish: true}})
	c, err := New(Config{Client: client, Informers: factory, Pool: pool, NodeName: "node1"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	factory.Start(ctx.Done())
	cache.WaitForCacheSync(ctx.Done(), c.runner.Synced...) // every initial add handled
	// The informers' adds queued node1's attachment only.
	if got := queued(c); !slices.Equal(got, []string{"va1"}) {
		t.Fatalf("queued %v, want only va1", got)
	}
	client.ClearActions()
	if _, err := c.syncAttachment(ctx, "va2"); err != nil || len(writes(client)) != 0 {
		t.Errorf("sync of node2's attachment: %v, writes %v", err, writes(client))
	}
	c.onCSINode(&storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "node2"}})
	c.onAttachmentUpdate(other, other)
	c.onAttachmentDeleted(other)
	if got := queued(c); len(got) != 0 || c.pvQ.Len() != 0 {
		t.Errorf("queued %v and %d PVs for node2's attachment", got, c.pvQ.Len())
	}
	c.resync(ctx) // revisits the attachments not attached: node1's alone
	if got := queued(c); !slices.Equal(got, []string{"va1"}) {
		t.Errorf("resync queued %v, want only va1", got)
	}
	// Once seen attached, it is at rest: the resync leaves it alone.
	va1, _ := c.vas.Get("va1")
	attached := va1.DeepCopy()
	attached.Status.Attached = true
	c.onAttachmentUpdate(va1, attached)
	queued(c)
	c.resync(ctx)
	if got := queued(c); len(got) != 0 {
		t.Errorf("resync after va1 was attached queued %v, want none", got)
	}
	// The same loop without a node name serves both.
	c2, _ := newTest(t, true, testVA(), other, testPV())
	cache.WaitForCacheSync(ctx.Done(), c2.runner.Synced...)
	if got := queued(c2); !slices.Equal(got, []string{"va1", "va2"}) {
		t.Errorf("without a node: queued %v, want both", got)
	}
}

// In node deployment a PV being deleted with our finalizer is this node's
// to release only when its node affinity admits the node.
func TestNodeDeploymentReleasesOnlyItsOwnNodesVolumes(t *testing.T) {
	on := func(node string) func(*v1.PersistentVolume) {
		return func(pv *v1.PersistentVolume) {
			pv.DeletionTimestamp = &metav1.Time{}
			pv.Finalizers = []string{attachment.Finalizer(drv)}
			pv.Spec.NodeAffinity = &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: []v1.NodeSelectorTerm{{
				MatchExpressions: []v1.NodeSelectorRequirement{{Key: topologyKey, Operator: v1.NodeSelectorOpIn, Values: []string{node}}}}}}}
		}
	}
	for node, want := range map[string]bool{"node1": true, "node2": false} {
		client := fake.NewClientset(testPV(on(node)))
		factory := informers.NewSharedInformerFactory(client, 0)
		pool := csi.NewPool(&csi.Endpoint{Info: csi.Info{Driver: drv, Publish: true, Topology: map[string]string{topologyKey: "node1"}}})
		c, err := New(Config{Client: client, Informers: factory, Pool: pool, NodeName: "node1"})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		factory.Start(ctx.Done())
		factory.WaitForCacheSync(ctx.Done())
		client.ClearActions()
		if _, err := c.syncVolume(ctx, "pv1"); err != nil {
			t.Fatal(err)
		}
		if got := len(writes(client)) == 1; got != want {
			t.Errorf("PV of %s: writes %v, want a finalizer removal: %t", node, writes(client), want)
		}
		cancel()
	}
}

const topologyKey = "topology.d.csi.test/node"

// queued drains the attachment queue and returns its keys, sorted.
func queued(c *Controller) []string {
	var out []string
	for c.vaQ.Len() > 0 {
		k, _ := c.vaQ.Get()
		c.vaQ.Done(k)
		c.vaQ.Forget(k)
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
