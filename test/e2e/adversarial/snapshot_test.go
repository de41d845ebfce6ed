package adversarial

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	snapclient "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/controller/manager"
	"github.com/volplane/volplane/internal/hostpath"
	"github.com/volplane/volplane/internal/provisioning"
	"github.com/volplane/volplane/internal/snapshotapi"
	"github.com/volplane/volplane/internal/stacktest"
	"github.com/volplane/volplane/test/e2e/support"
)

// victimSnapshot is a snapshot of the victim's node-local volume (taken
// after its file was written): the backend snapshot, and the
// VolumeSnapshot vsnap of namespace victim bound both ways to its content.
type victimSnapshot struct {
	handle  string
	content string
}

// snapshotVictim takes the victim's snapshot as its administrator would
// pre-provision it (a backend snapshot, a content naming it and the
// victim's VolumeSnapshot vsnap, which the snapshot loops bind and find
// ready), and removes it all after the test.
func (w *world) snapshotVictim() victimSnapshot {
	w.t.Helper()
	snaps := w.snapshots()
	var snap *csipb.Snapshot
	var ctl csipb.ControllerClient
	for _, ep := range stack.Drivers.Endpoints {
		conn, err := support.Dial(ep)
		w.must(err)
		w.t.Cleanup(func() { conn.Close() })
		c := csipb.NewControllerClient(conn)
		resp, err := c.CreateSnapshot(w.ctx, &csipb.CreateSnapshotRequest{Name: "victim-snapshot", SourceVolumeId: w.data.pv.Spec.CSI.VolumeHandle})
		if err == nil {
			snap, ctl = resp.GetSnapshot(), c
			break
		}
	}
	if snap == nil {
		w.t.Fatal("no endpoint took a snapshot of the victim's volume")
	}
	v := victimSnapshot{handle: snap.GetSnapshotId(), content: "victim-content"}
	content := &snapv1.VolumeSnapshotContent{
		ObjectMeta: metav1.ObjectMeta{Name: v.content},
		Spec: snapv1.VolumeSnapshotContentSpec{Driver: hostpath.DriverName, DeletionPolicy: snapv1.VolumeSnapshotContentRetain,
			Source:            snapv1.VolumeSnapshotContentSource{SnapshotHandle: ptr.To(v.handle)},
			VolumeSnapshotRef: corev1.ObjectReference{Namespace: victimNS, Name: "vsnap"}},
	}
	_, err := snaps.SnapshotV1().VolumeSnapshotContents().Create(w.ctx, content, metav1.CreateOptions{})
	w.must(err)
	w.t.Cleanup(func() {
		clear := []byte(`{"metadata":{"finalizers":null}}`)
		for _, ns := range []string{victimNS, evilNS} {
			list, _ := snaps.SnapshotV1().VolumeSnapshots(ns).List(w.ctx, metav1.ListOptions{})
			for _, s := range list.Items {
				_ = snaps.SnapshotV1().VolumeSnapshots(ns).Delete(w.ctx, s.Name, metav1.DeleteOptions{})
				_, _ = snaps.SnapshotV1().VolumeSnapshots(ns).Patch(w.ctx, s.Name, types.MergePatchType, clear, metav1.PatchOptions{})
			}
		}
		_ = snaps.SnapshotV1().VolumeSnapshotContents().Delete(w.ctx, v.content, metav1.DeleteOptions{})
		_, _ = snaps.SnapshotV1().VolumeSnapshotContents().Patch(w.ctx, v.content, types.MergePatchType, clear, metav1.PatchOptions{})
		if _, err := ctl.DeleteSnapshot(w.ctx, &csipb.DeleteSnapshotRequest{SnapshotId: v.handle}); err != nil {
			w.t.Errorf("DeleteSnapshot %s: %v", v.handle, err)
		}
	})
	vs := &snapv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "vsnap", Namespace: victimNS},
		Spec: snapv1.VolumeSnapshotSpec{Source: snapv1.VolumeSnapshotSource{VolumeSnapshotContentName: ptr.To(v.content)}}}
	_, err = snaps.SnapshotV1().VolumeSnapshots(victimNS).Create(w.ctx, vs, metav1.CreateOptions{})
	w.must(err)
	w.eventually("the victim's snapshot bound and ready", func() string {
		vs, err := snaps.SnapshotV1().VolumeSnapshots(victimNS).Get(w.ctx, "vsnap", metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		if st := vs.Status; st == nil || st.ReadyToUse == nil || !*st.ReadyToUse {
			return fmt.Sprintf("status %+v", st)
		}
		return ""
	})
	return v
}

func (w *world) snapshots() snapclient.Interface {
	w.t.Helper()
	snaps, err := snapclient.NewForConfig(stack.CP.RESTConfig)
	w.must(err)
	return snaps
}

// withoutTheSnapshotLoop runs the stack's loops without the snapshot loop
// (the snapshot-controller's role) for the rest of the test, so that a
// status written by hand stays as written.
func (w *world) withoutTheSnapshotLoop() {
	w.t.Helper()
	w.must(stack.StopLoops())
	cfg := stack.LoopsConfig()
	cfg.Controllers = slices.DeleteFunc(slices.Clone(cfg.Controllers), func(c string) bool { return c == manager.Snapshot })
	stack.Loops = stacktest.StartLoops(cfg)
	w.t.Cleanup(func() {
		if err := stack.StopLoops(); err != nil {
			w.t.Errorf("loops without the snapshot loop: %v", err)
		}
		stack.StartLoops()
	})
}

// forgedSnapshot is VolumeSnapshot ns/name with the status the
// snapshot-controller would write had it bound it to content, ready: a
// lie when the content does not point back (a tenant cannot write a
// snapshot's status; a mistaken or compromised writer of statuses can).
func (w *world) forgedSnapshot(ns, name, content string) {
	w.t.Helper()
	snaps := w.snapshots()
	vs := &snapv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: snapv1.VolumeSnapshotSpec{Source: snapv1.VolumeSnapshotSource{VolumeSnapshotContentName: ptr.To(content)}}}
	vs, err := snaps.SnapshotV1().VolumeSnapshots(ns).Create(w.ctx, vs, metav1.CreateOptions{})
	w.must(err)
	w.t.Cleanup(func() {
		_, _ = snaps.SnapshotV1().VolumeSnapshots(ns).Patch(w.ctx, name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		_ = snaps.SnapshotV1().VolumeSnapshots(ns).Delete(w.ctx, name, metav1.DeleteOptions{})
	})
	vs.Status = &snapv1.VolumeSnapshotStatus{BoundVolumeSnapshotContentName: ptr.To(content), ReadyToUse: ptr.To(true),
		RestoreSize: resource.NewQuantity(1, resource.BinarySI)}
	_, err = snaps.SnapshotV1().VolumeSnapshots(ns).UpdateStatus(w.ctx, vs, metav1.UpdateOptions{})
	w.must(err)
}

// restoring makes a claim restore from VolumeSnapshot name, through
// dataSourceRef naming namespace ns ("" for none).
func restoring(name, ns string) func(*corev1.PersistentVolumeClaim) {
	return func(c *corev1.PersistentVolumeClaim) {
		ref := &corev1.TypedObjectReference{APIGroup: ptr.To(snapshotapi.Group), Kind: snapshotapi.KindSnapshot, Name: name}
		if ns != "" {
			ref.Namespace = ptr.To(ns)
		}
		c.Spec.DataSourceRef = ref
	}
}

// (f) A restore whose dataSourceRef names the victim's VolumeSnapshot in
// the victim's namespace. volplane refuses any data source in another
// namespace ("dataSourceRef namespace specified but the
// CrossNamespaceVolumeDataSource feature is disabled"): it implements no
// ReferenceGrant check, and the gate is alpha and off. With the gate off
// the API server drops the namespace, and the claim names a snapshot of
// the tenant's own namespace, which does not exist (or, as the embedded
// API server does, drops the whole reference: the claim gets an empty
// volume).
func TestRestoreFromAnotherNamespacesSnapshot(t *testing.T) {
	w := begin(t)
	w.snapshotVictim()
	c := newClaim("copy", localClass)
	restoring("vsnap", victimNS)(c)
	c, err := tenant.CoreV1().PersistentVolumeClaims(evilNS).Create(w.ctx, c, metav1.CreateOptions{})
	if err != nil {
		t.Logf("the API server refuses the claim: %v", err)
		w.verify()
		return
	}
	t.Logf("dataSourceRef as stored: %+v", c.Spec.DataSourceRef)
	got, warning := w.answered("copy", "ProvisioningFailed", bound)
	t.Logf("claim copy: %s, warning %q", phase(got), warning)
	if got != nil && bound(got) && (got.Spec.DataSourceRef != nil || got.Spec.DataSource != nil) {
		t.Errorf("claim copy is Bound from another namespace's snapshot: %+v", got.Spec.DataSourceRef)
	}
	w.noCanary(got)
	w.verify()
}

// (f) A VolumeSnapshot of the tenant's namespace whose status says it is
// bound to the victim's content (written by hand, the snapshot loop off,
// which would refuse to bind it) (which points back at the victim's
// snapshot): the back-pointer check refuses it for good, and no volume is
// made from the victim's snapshot.
func TestRestoreFromASnapshotBoundToAnotherNamespacesContent(t *testing.T) {
	w := begin(t)
	v := w.snapshotVictim()
	w.withoutTheSnapshotLoop()
	w.forgedSnapshot(evilNS, "mine", v.content)
	w.evilClaim("copy", localClass, restoring("mine", ""))
	got, warning := w.answered("copy", "ProvisioningFailed", bound)
	t.Logf("claim copy: %s, warning %q", phase(got), warning)
	if got != nil && bound(got) {
		t.Errorf("claim copy is Bound from a snapshot bound to another namespace's content")
	} else {
		want := fmt.Sprintf("snapshotcontent %s for snapshot mine is bound to a different snapshot", v.content)
		w.eventually("the back-pointer refusal reported", func() string {
			if evs := w.events(got.UID); !strings.Contains(evs, want) {
				return "events: " + evs
			}
			return ""
		})
	}
	w.noCanary(got)
	w.verify()
}

// (h) A recorded request under the claim's own name that restores the
// victim's snapshot, on a claim whose own data source gives no snapshot:
// the record is refused (a recorded snapshot is re-derived from the
// claim's data source, never trusted), and the cleanup of the deleted
// claim leaves no copy of the victim's data.
func TestRecordedRequestRestoringTheVictimsSnapshot(t *testing.T) {
	w := begin(t)
	v := w.snapshotVictim()
	w.evilClaim("copy", "no-such-class", restoring("mine", ""))
	w.evilUpdate("copy", func(c *corev1.PersistentVolumeClaim) {
		forged("", hostpath.DriverName, w.data.node)(c)
		c.Annotations[provisioning.AnnCreateRequest] = fmt.Sprintf(`{"name":"pvc-%s","capacityRange":{"requiredBytes":"1"},`+
			`"volumeCapabilities":[{"mount":{},"accessMode":{"mode":"SINGLE_NODE_WRITER"}}],"volumeContentSource":{"snapshot":{"snapshotId":%q}}}`,
			c.UID, v.handle)
	})
	uid := w.claim(evilNS, "copy").UID
	w.evilDelete("copy")
	t.Logf("claim copy deleted: %q", w.deletedAnswer("copy"))
	if why := w.warning(evilNS, uid, provisioning.EventRecordRejected); !strings.Contains(why, v.handle) {
		t.Errorf("the forged record was not reported as rejected: %q", why)
	}
	w.verify()
}
