package snapshotter

import (
	"context"
	"fmt"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/csi"
	"github.com/volplane/volplane/internal/hostpath"
	"github.com/volplane/volplane/internal/snapshotapi"
	"github.com/volplane/volplane/test/e2e/support"
)

// endpoint is node i's driver, through the test's own pool.
func endpoint(i int) *csi.Endpoint { return bed.pool.Endpoints(hostpath.DriverName)[i] }

// makeVolume has node i's driver make a volume and registers a PV for it,
// pinned to the node as the provisioner pins one; both go when the test
// ends. It returns the volume handle.
func makeVolume(t *testing.T, i int) string {
	t.Helper()
	ctx := context.Background()
	node := bed.nodes[i]
	vol, err := endpoint(i).CreateVolume(ctx, &csipb.CreateVolumeRequest{Name: "vol-" + string(uuid.NewUUID()),
		CapacityRange: &csipb.CapacityRange{RequiredBytes: 1 << 20},
		VolumeCapabilities: []*csipb.VolumeCapability{{AccessType: &csipb.VolumeCapability_Mount{Mount: &csipb.VolumeCapability_MountVolume{}},
			AccessMode: &csipb.VolumeCapability_AccessMode{Mode: csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER}}},
		AccessibilityRequirements: &csipb.TopologyRequirement{Preferred: []*csipb.Topology{{Segments: map[string]string{hostpath.TopologyKey: node}}}},
	})
	if err != nil {
		t.Fatalf("CreateVolume on %s: %v", node, err)
	}
	id := vol.GetVolumeId()
	pv := support.NodeVolume("pv-"+string(uuid.NewUUID()), id, node)
	if _, err := bed.cp.Client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create PV: %v", err)
	}
	t.Cleanup(func() {
		_ = bed.cp.Client.CoreV1().PersistentVolumes().Delete(context.Background(), pv.Name, metav1.DeleteOptions{})
		_ = endpoint(i).DeleteVolume(context.Background(), id, nil)
	})
	return id
}

// snapshotsOf are the IDs of the snapshots node i's driver holds of the
// source volume.
func snapshotsOf(t *testing.T, i int, source string) []string {
	t.Helper()
	snaps, err := endpoint(i).ListSnapshots(context.Background(), &csipb.ListSnapshotsRequest{SourceVolumeId: source})
	if err != nil {
		t.Fatalf("ListSnapshots on %s: %v", bed.nodes[i], err)
	}
	var ids []string
	for _, s := range snaps {
		ids = append(ids, s.GetSnapshotId())
	}
	return ids
}

// holds says whether node i's driver lists the snapshot.
func holds(t *testing.T, i int, id string) bool {
	t.Helper()
	snaps, err := endpoint(i).ListSnapshots(context.Background(), &csipb.ListSnapshotsRequest{SnapshotId: id})
	if err != nil {
		t.Fatalf("ListSnapshots on %s: %v", bed.nodes[i], err)
	}
	return len(snaps) > 0
}

// snapshotRef is a VolumeSnapshot reference, as the snapshot-controller
// writes it on a content it creates.
func snapshotRef(ns, name string, uid types.UID) corev1.ObjectReference {
	return corev1.ObjectReference{Kind: snapshotapi.KindSnapshot, APIVersion: snapshotapi.Group + "/v1", Namespace: ns, Name: name, UID: uid}
}

// dynamicContent is the content the snapshot-controller makes for a new
// VolumeSnapshot ns/name of the volume: bound, with the finalizer and the
// deletion-secret annotations resolved from paramsClass.
func dynamicContent(ns, name, volume string, policy snapv1.DeletionPolicy) *snapv1.VolumeSnapshotContent {
	uid := uuid.NewUUID()
	return &snapv1.VolumeSnapshotContent{
		ObjectMeta: metav1.ObjectMeta{Name: snapshotapi.ContentName(uid), Finalizers: []string{snapshotapi.ContentFinalizer},
			Annotations: map[string]string{snapshotapi.DeletionSecretName: secretName, snapshotapi.DeletionSecretNamespace: ns}},
		Spec: snapv1.VolumeSnapshotContentSpec{VolumeSnapshotRef: snapshotRef(ns, name, uid), DeletionPolicy: policy,
			Driver: hostpath.DriverName, VolumeSnapshotClassName: ptr.To(paramsClass),
			Source: snapv1.VolumeSnapshotContentSource{VolumeHandle: ptr.To(volume)}},
	}
}

// secret creates the class's snapshotter secret in ns.
func secret(t *testing.T, ns string) map[string]string {
	t.Helper()
	data := map[string]string{"token": "s3cr3t-" + ns}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: secretName}, StringData: data}
	if _, err := bed.cp.Client.CoreV1().Secrets(ns).Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create secret: %v", err)
	}
	return data
}

// create creates the content; when the test ends it is released and
// deleted if still there.
func create(t *testing.T, c *snapv1.VolumeSnapshotContent) {
	t.Helper()
	if _, err := bed.snaps.SnapshotV1().VolumeSnapshotContents().Create(context.Background(), c, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create content %s: %v", c.Name, err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		contents := bed.snaps.SnapshotV1().VolumeSnapshotContents()
		_ = contents.Delete(ctx, c.Name, metav1.DeleteOptions{})
		if cur, err := contents.Get(ctx, c.Name, metav1.GetOptions{}); err == nil && len(cur.Finalizers) > 0 {
			cur.Finalizers = nil
			_, _ = contents.Update(ctx, cur, metav1.UpdateOptions{})
		}
	})
}

func get(t *testing.T, name string) *snapv1.VolumeSnapshotContent {
	t.Helper()
	c, err := bed.snaps.SnapshotV1().VolumeSnapshotContents().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get content %s: %v", name, err)
	}
	return c
}

// waitReady waits until the content's status says readyToUse.
func waitReady(t *testing.T, name string) *snapv1.VolumeSnapshotContent {
	t.Helper()
	return support.WaitContent(t, bed.snaps, alive, "content "+name+" ready", name, support.ContentReady)
}

// holdFirstCreate holds the first CreateSnapshot of backend until release
// is closed, then answers it with answer (h is the driver's own answer);
// later ones go straight to the driver. called is closed when the first
// arrives. The fault goes when the test ends.
func holdFirstCreate(t *testing.T, backend string, answer func(h func() (any, error)) (any, error)) (called, release chan struct{}) {
	t.Helper()
	called, release = make(chan struct{}), make(chan struct{})
	first := true
	bed.calls.fault(backend, func(_ context.Context, h func() (any, error)) (any, error) {
		if !first {
			return h()
		}
		first = false
		close(called)
		<-release
		return answer(h)
	})
	t.Cleanup(func() { bed.calls.fault(backend, nil) })
	return called, release
}

// deleteAsSnapshotController does what the snapshot-controller does once
// the content's VolumeSnapshot is being deleted: the being-deleted
// annotation, then the content's delete.
func deleteAsSnapshotController(t *testing.T, name string) {
	t.Helper()
	markBeingDeleted(t, name)
	deleteContent(t, name)
}

func markBeingDeleted(t *testing.T, name string) {
	t.Helper()
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:"yes"}}}`, snapshotapi.BeingDeleted)
	if _, err := bed.snaps.SnapshotV1().VolumeSnapshotContents().Patch(context.Background(), name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("annotate content %s being deleted: %v", name, err)
	}
}

func deleteContent(t *testing.T, name string) {
	t.Helper()
	if err := bed.snaps.SnapshotV1().VolumeSnapshotContents().Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete content %s: %v", name, err)
	}
}

// contentGone is a condition: the content no longer exists.
func contentGone(name string) func() string {
	return func() string {
		c, err := bed.snaps.SnapshotV1().VolumeSnapshotContents().Get(context.Background(), name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			return ""
		case err != nil:
			return err.Error()
		}
		return fmt.Sprintf("still there: finalizers %v, annotations %v", c.Finalizers, c.Annotations)
	}
}
