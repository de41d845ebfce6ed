package nodeattach

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/attachment"
	"github.com/volplane/volplane/internal/controller/manager"
	"github.com/volplane/volplane/internal/controller/provisioner"
	"github.com/volplane/volplane/internal/hostpath"
	"github.com/volplane/volplane/internal/stacktest"
	"github.com/volplane/volplane/test/e2e/support"
)

// With a node-deployment attacher per node (deploy/attach), each node's
// VolumeAttachment is attached and detached by its own node's loop through
// its own node's driver; the other node's loop never calls its driver for
// it, never writes it or its PV, and is refused nothing; the component's
// grants are each used; and the admission policy refuses a node's write
// to the other node's attachment.
func TestEachNodeAttachesOnlyItsOwnAttachments(t *testing.T) {
	ctx := context.Background()
	cp := stacktest.ControlPlane(t)
	a, b := bed.nodes[0], bed.nodes[1]
	objs, err := nodeObjects()
	if err != nil {
		t.Fatal(err)
	}
	if err := create(ctx, cp.Client, objs); err != nil {
		t.Fatal(err)
	}
	logs := map[string]*requestLog{}
	for _, node := range bed.nodes {
		logs[node] = newRequestLog()
	}
	pvA, handleA := volume(t, cp.Client, a)
	pvB, handleB := volume(t, cp.Client, b)

	// Before any loop runs: once the API server has loaded the policy, B's
	// token may not write A's attachment, while RBAC alone would let it.
	vaA := attach(t, cp.Client, pvA, a)
	probe := newRequestLog()
	rcB, err := nodeConfig(ctx, cp, b, probe)
	if err != nil {
		t.Fatal(err)
	}
	asB := kubernetes.NewForConfigOrDie(rcB)
	stacktest.Eventually(t, "B's write to A's attachment refused by the admission policy", func() string {
		_, err := asB.StorageV1().VolumeAttachments().Patch(ctx, vaA.Name, types.MergePatchType,
			[]byte(`{"metadata":{"annotations":{"example.com/from-b":"x"}}}`), metav1.PatchOptions{})
		if apierrors.IsForbidden(err) && strings.Contains(err.Error(), "volplane-node on "+b+" may write only the VolumeAttachments of its own node") {
			return ""
		}
		return fmt.Sprintf("patch answered %v", err)
	}, nil)

	for _, node := range bed.nodes {
		rc, err := nodeConfig(ctx, cp, node, logs[node])
		if err != nil {
			t.Fatal(err)
		}
		loops := stacktest.StartLoops(manager.Config{REST: rc, Controllers: []string{manager.Attacher},
			CSIEndpoints:   []string{bed.endpoints[node]},
			NodeDeployment: &provisioner.NodeDeployment{NodeName: node},
			Workers:        2, ResyncPeriod: 2 * time.Second})
		t.Cleanup(func() {
			if err := loops.Stop(); err != nil {
				t.Errorf("loops of %s: %v", node, err)
			}
		})
	}
	vaB := attach(t, cp.Client, pvB, b)
	for _, va := range []*storagev1.VolumeAttachment{vaA, vaB} {
		stacktest.Eventually(t, "VolumeAttachment "+va.Name+" of "+va.Spec.NodeName+" attached", func() string {
			got, err := cp.Client.StorageV1().VolumeAttachments().Get(ctx, va.Name, metav1.GetOptions{})
			if err != nil {
				return err.Error()
			}
			if !got.Status.Attached || !slices.Contains(got.Finalizers, attachment.Finalizer(hostpath.DriverName)) {
				return fmt.Sprintf("status %+v, finalizers %v", got.Status, got.Finalizers)
			}
			return ""
		}, nil)
	}
	for node, handle := range map[string]string{a: handleA, b: handleB} {
		other := a
		if node == a {
			other = b
		}
		if n := bed.calls[node].count("ControllerPublishVolume", handle); n != 1 {
			t.Errorf("%s's driver: ControllerPublishVolume of its volume %d times, want 1", node, n)
		}
		if n := bed.calls[other].any(handle); n != 0 {
			t.Errorf("%s's driver got %d calls for %s's volume", other, n, node)
		}
	}

	// Detach A's volume: A's loop unpublishes and lets the attachment go.
	if err := cp.Client.StorageV1().VolumeAttachments().Delete(ctx, vaA.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	stacktest.Eventually(t, "A's attachment detached and gone", func() string {
		if _, err := cp.Client.StorageV1().VolumeAttachments().Get(ctx, vaA.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			return fmt.Sprintf("still there (%v)", err)
		}
		return ""
	}, nil)
	if n := bed.calls[a].count("ControllerUnpublishVolume", handleA); n != 1 {
		t.Errorf("A's driver: ControllerUnpublishVolume %d times, want 1", n)
	}
	// A's PV deleted: A's loop takes its finalizer off (B's leaves it alone).
	if err := cp.Client.CoreV1().PersistentVolumes().Delete(ctx, pvA.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	stacktest.Eventually(t, "A's PV released by A's attacher", func() string {
		pv, err := cp.Client.CoreV1().PersistentVolumes().Get(ctx, pvA.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return ""
		}
		if err != nil {
			return err.Error()
		}
		if slices.Contains(pv.Finalizers, attachment.Finalizer(hostpath.DriverName)) {
			return fmt.Sprintf("finalizers %v", pv.Finalizers)
		}
		return ""
	}, nil)
	if n := bed.calls[b].any(handleA); n != 0 {
		t.Errorf("B's driver got %d calls for A's volume", n)
	}

	// Each loop wrote only its own node's objects, and was refused nothing.
	own := map[string][]string{a: {vaA.Name, pvA.Name}, b: {vaB.Name, pvB.Name}}
	for node, log := range logs {
		for _, c := range log.all() {
			if c.status == 403 {
				t.Errorf("%s's loop refused: %s", node, c)
			}
			if c.verb != "list" && c.verb != "watch" && c.verb != "get" && !slices.Contains(own[node], c.name) {
				t.Errorf("%s's loop wrote another node's object: %s", node, c)
			}
		}
	}
	for _, g := range attacherGrants(objs) {
		if !logs[a].uses(g) && !logs[b].uses(g) {
			t.Errorf("volplane-node-attacher grants %s %s.%s, which no node's attacher used", g.verb, g.resource, g.group)
		}
	}
}

// volume makes a backend volume through node's driver, as the node's
// provisioner would, and its PV (pinned to the node, as deploy/'s
// admission policy requires of the node role's volumes).
func volume(t *testing.T, c kubernetes.Interface, node string) (*corev1.PersistentVolume, string) {
	t.Helper()
	ctx := context.Background()
	conn, err := support.Dial(bed.endpoints[node])
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	name := stacktest.Namespace(t) + "-" + node
	vol, err := csipb.NewControllerClient(conn).CreateVolume(ctx, &csipb.CreateVolumeRequest{Name: name,
		CapacityRange: &csipb.CapacityRange{RequiredBytes: 1 << 20},
		VolumeCapabilities: []*csipb.VolumeCapability{{
			AccessType: &csipb.VolumeCapability_Mount{Mount: &csipb.VolumeCapability_MountVolume{}},
			AccessMode: &csipb.VolumeCapability_AccessMode{Mode: csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER}}}})
	if err != nil {
		t.Fatalf("CreateVolume on %s: %v", node, err)
	}
	handle := vol.GetVolume().GetVolumeId()
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Mi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: hostpath.DriverName, VolumeHandle: handle}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: hostpath.TopologyKey, Operator: corev1.NodeSelectorOpIn, Values: []string{node}}}}}}},
		}}
	if pv, err = c.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = c.CoreV1().PersistentVolumes().Patch(ctx, pv.Name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		_ = c.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{})
	})
	return pv, handle
}

// attach makes the VolumeAttachment the attach/detach loop would.
func attach(t *testing.T, c kubernetes.Interface, pv *corev1.PersistentVolume, node string) *storagev1.VolumeAttachment {
	t.Helper()
	ctx := context.Background()
	va := &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: attachment.Name(pv.Spec.CSI.VolumeHandle, hostpath.DriverName, node)},
		Spec: storagev1.VolumeAttachmentSpec{Attacher: hostpath.DriverName, NodeName: node,
			Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To(pv.Name)}}}
	va, err := c.StorageV1().VolumeAttachments().Create(ctx, va, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = c.StorageV1().VolumeAttachments().Patch(ctx, va.Name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		_ = c.StorageV1().VolumeAttachments().Delete(ctx, va.Name, metav1.DeleteOptions{})
	})
	return va
}
