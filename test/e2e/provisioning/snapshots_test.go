package provisioning

import (
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/container-storage-interface/spec/lib/go/csi"
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	snapclient "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/bundle"
	"github.com/volplane/volplane/internal/endpoint"
	"github.com/volplane/volplane/internal/hostpath"
	"github.com/volplane/volplane/internal/snapshotapi"
	"github.com/volplane/volplane/internal/stacktest"
)

// The snapshot API in this suite: the CRDs, installed by the first test
// that needs them (the suite's loops are the binder and the provisioner;
// no snapshot loop runs here, so snapshots are made and bound by hand, as
// an administrator pre-provisions them).
var snapshotAPI struct {
	once   sync.Once
	err    error
	client snapclient.Interface
}

// snapshots installs the snapshot API once and returns its client.
func (e *env) snapshots() snapclient.Interface {
	e.t.Helper()
	snapshotAPI.once.Do(func() {
		rc := stacktest.ControlPlane(e.t).RESTConfig
		if snapshotAPI.err = bundle.RegisterSnapshots(e.ctx, rc); snapshotAPI.err == nil {
			snapshotAPI.client, snapshotAPI.err = snapclient.NewForConfig(rc)
		}
	})
	if snapshotAPI.err != nil {
		e.t.Fatalf("snapshot API: %v", snapshotAPI.err)
	}
	return snapshotAPI.client
}

// driverOf is the driver of node.
func driverOf(node string) *nodeDriver {
	for _, d := range bed.drivers {
		if d.node == node {
			return d
		}
	}
	return nil
}

// volumeDir is where the driver of vol's node keeps a mount volume's files.
func volumeDir(vol backendVolume) string {
	sock, err := endpoint.Parse(driverOf(vol.node).endpoint)
	if err != nil {
		panic(err)
	}
	return filepath.Join(filepath.Dir(sock), vol.node, "volumes", vol.id)
}

// writeFile writes a file into a backend volume.
func (e *env) writeFile(vol backendVolume, name, text string) {
	e.t.Helper()
	e.noError(os.WriteFile(filepath.Join(volumeDir(vol), name), []byte(text), 0o644), "write into volume "+vol.id)
}

// readFile reads a file of a backend volume ("" if it cannot).
func readFile(vol backendVolume, name string) string {
	b, err := os.ReadFile(filepath.Join(volumeDir(vol), name))
	if err != nil {
		return ""
	}
	return string(b)
}

// backendSnapshot takes a snapshot of vol on its node's driver, as an
// administrator would before pre-provisioning it, and deletes it after the
// test. It returns the snapshot's handle and size.
func (e *env) backendSnapshot(vol backendVolume, name string) (string, int64) {
	e.t.Helper()
	d := driverOf(vol.node)
	resp, err := d.csi.CreateSnapshot(e.ctx, &csi.CreateSnapshotRequest{Name: name, SourceVolumeId: vol.id})
	e.noError(err, "CreateSnapshot of "+vol.id)
	id := resp.GetSnapshot().GetSnapshotId()
	e.t.Cleanup(func() {
		if _, err := d.csi.DeleteSnapshot(e.ctx, &csi.DeleteSnapshotRequest{SnapshotId: id}); err != nil {
			e.t.Errorf("DeleteSnapshot %s: %v", id, err)
		}
	})
	return id, resp.GetSnapshot().GetSizeBytes()
}

// preProvisioned makes the VolumeSnapshot name of the test's namespace
// bound both ways to a new content for backend snapshot handle (Retain:
// deleting the objects leaves the backend snapshot to backendSnapshot's
// cleanup), with the status the snapshot loops would write: ready, of
// size bytes. ready false leaves both not ready yet.
func (e *env) preProvisioned(name, handle string, bytes int64, ready bool) (*snapv1.VolumeSnapshot, *snapv1.VolumeSnapshotContent) {
	e.t.Helper()
	snaps := e.snapshots()
	content := &snapv1.VolumeSnapshotContent{
		ObjectMeta: metav1.ObjectMeta{Name: e.ns + "-" + name},
		Spec: snapv1.VolumeSnapshotContentSpec{
			Driver: hostpath.DriverName, DeletionPolicy: snapv1.VolumeSnapshotContentRetain,
			Source:            snapv1.VolumeSnapshotContentSource{SnapshotHandle: ptr.To(handle)},
			SourceVolumeMode:  ptr.To(corev1.PersistentVolumeFilesystem),
			VolumeSnapshotRef: corev1.ObjectReference{Namespace: e.ns, Name: name},
		},
	}
	content, err := snaps.SnapshotV1().VolumeSnapshotContents().Create(e.ctx, content, metav1.CreateOptions{})
	e.noError(err, "create content")
	e.t.Cleanup(func() { e.removeSnapshot(name, content.Name) })
	vs := &snapv1.VolumeSnapshot{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns},
		Spec:       snapv1.VolumeSnapshotSpec{Source: snapv1.VolumeSnapshotSource{VolumeSnapshotContentName: ptr.To(content.Name)}},
	}
	vs, err = snaps.SnapshotV1().VolumeSnapshots(e.ns).Create(e.ctx, vs, metav1.CreateOptions{})
	e.noError(err, "create snapshot")
	content.Spec.VolumeSnapshotRef.UID = vs.UID
	content, err = snaps.SnapshotV1().VolumeSnapshotContents().Update(e.ctx, content, metav1.UpdateOptions{})
	e.noError(err, "bind content")
	return e.setReady(vs, content, bytes, ready)
}

// setReady writes both statuses: bound, ready or not, of size bytes.
func (e *env) setReady(vs *snapv1.VolumeSnapshot, content *snapv1.VolumeSnapshotContent, bytes int64, ready bool) (*snapv1.VolumeSnapshot, *snapv1.VolumeSnapshotContent) {
	e.t.Helper()
	snaps := e.snapshots()
	content.Status = &snapv1.VolumeSnapshotContentStatus{SnapshotHandle: content.Spec.Source.SnapshotHandle,
		ReadyToUse: ptr.To(ready), RestoreSize: ptr.To(bytes)}
	content, err := snaps.SnapshotV1().VolumeSnapshotContents().UpdateStatus(e.ctx, content, metav1.UpdateOptions{})
	e.noError(err, "content status")
	vs, err = snaps.SnapshotV1().VolumeSnapshots(e.ns).Get(e.ctx, vs.Name, metav1.GetOptions{})
	e.noError(err, "get snapshot")
	vs.Status = &snapv1.VolumeSnapshotStatus{BoundVolumeSnapshotContentName: ptr.To(content.Name), ReadyToUse: ptr.To(ready),
		RestoreSize: resourceBytes(bytes)}
	vs, err = snaps.SnapshotV1().VolumeSnapshots(e.ns).UpdateStatus(e.ctx, vs, metav1.UpdateOptions{})
	e.noError(err, "snapshot status")
	return vs, content
}

// removeSnapshot deletes the snapshot and its content, finalizers and all.
func (e *env) removeSnapshot(name, content string) {
	snaps := e.snapshots()
	clear := []byte(`{"metadata":{"finalizers":null}}`)
	_, _ = snaps.SnapshotV1().VolumeSnapshots(e.ns).Patch(e.ctx, name, types.MergePatchType, clear, metav1.PatchOptions{})
	_ = snaps.SnapshotV1().VolumeSnapshots(e.ns).Delete(e.ctx, name, metav1.DeleteOptions{})
	_, _ = snaps.SnapshotV1().VolumeSnapshotContents().Patch(e.ctx, content, types.MergePatchType, clear, metav1.PatchOptions{})
	_ = snaps.SnapshotV1().VolumeSnapshotContents().Delete(e.ctx, content, metav1.DeleteOptions{})
}

// snapshotFinalizers are the finalizers of the test's snapshot name.
func (e *env) snapshotFinalizers(name string) []string {
	e.t.Helper()
	vs, err := e.snapshots().SnapshotV1().VolumeSnapshots(e.ns).Get(e.ctx, name, metav1.GetOptions{})
	e.noError(err, "get snapshot "+name)
	return vs.Finalizers
}

// holdsSourceFinalizer says whether the snapshot carries the provisioner's
// finalizer.
func (e *env) holdsSourceFinalizer(name string) bool {
	return slices.Contains(e.snapshotFinalizers(name), snapshotapi.ProvisionerSourceFinalizer)
}

// restoredFrom makes a claim restore from the snapshot name.
func restoredFrom(name string) claimOpt {
	return func(c *corev1.PersistentVolumeClaim) {
		c.Spec.DataSource = &corev1.TypedLocalObjectReference{APIGroup: ptr.To(snapshotapi.Group), Kind: snapshotapi.KindSnapshot, Name: name}
	}
}

// backendSnapshotsOf counts the backend snapshots taken of vol.
func (e *env) backendSnapshotsOf(vol backendVolume) int {
	e.t.Helper()
	resp, err := driverOf(vol.node).csi.ListSnapshots(e.ctx, &csi.ListSnapshotsRequest{SourceVolumeId: vol.id})
	e.noError(err, "ListSnapshots of "+vol.id)
	return len(resp.GetEntries())
}
