package explain

import (
	"strings"
	"testing"

	csispec "github.com/container-storage-interface/spec/lib/go/csi"
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	snapclient "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/bundle"
	"github.com/volplane/volplane/internal/csi"
	"github.com/volplane/volplane/internal/explain"
	"github.com/volplane/volplane/internal/hostpath"
	"github.com/volplane/volplane/internal/inspect"
	"github.com/volplane/volplane/internal/invariants"
	"github.com/volplane/volplane/internal/snapshotapi"
)

// networkEndpoint is the network driver's controller socket.
func networkEndpoint(t *testing.T) string {
	for _, ep := range stack.Drivers.Endpoints {
		if strings.HasSuffix(ep, "/network.sock") {
			return ep
		}
	}
	t.Fatalf("no network endpoint among %v", stack.Drivers.Endpoints)
	return ""
}

// A snapshot's report follows it from its claim to its deletion. The
// loops are stopped once the claim is bound and the snapshot's objects are
// made by hand, each state in turn, so that the report is checked against
// exactly what the snapshot and snapshotter loops would leave.
func TestExplainVolumeSnapshotFromClaimToDeletion(t *testing.T) {
	e := newEnv(t)
	snaps := snapclient.NewForConfigOrDie(stack.CP.RESTConfig)
	e.claim("db", "1Gi", bundle.NetworkClass)
	e.eventually("claim db Bound", e.claimPhase("db", corev1.ClaimBound))
	pv := e.getVolume(e.getClaim("db").Spec.VolumeName)
	if err := stack.StopLoops(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stack.StartLoops)

	api := snaps.SnapshotV1()
	vs := &snapv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "nightly",
		Finalizers: []string{snapshotapi.AsSourceFinalizer, snapshotapi.BoundFinalizer}},
		Spec: snapv1.VolumeSnapshotSpec{Source: snapv1.VolumeSnapshotSource{PersistentVolumeClaimName: ptr.To("db")},
			VolumeSnapshotClassName: ptr.To(bundle.NetworkSnapshotClass)}}
	vs, err := api.VolumeSnapshots(e.ns).Create(e.ctx, vs, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	contentName := snapshotapi.ContentName(vs.UID)
	ep, err := csi.Dial(e.ctx, networkEndpoint(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	backend, err := ep.CreateSnapshot(e.ctx, &csispec.CreateSnapshotRequest{Name: snapshotapi.BackendName(vs.UID), SourceVolumeId: pv.Spec.CSI.VolumeHandle})
	if err != nil {
		t.Fatal(err)
	}
	handle := backend.GetSnapshotId()
	t.Cleanup(func() {
		for _, name := range []string{vs.Name} {
			if got, err := api.VolumeSnapshots(e.ns).Get(e.ctx, name, metav1.GetOptions{}); err == nil {
				got.Finalizers = nil
				_, _ = api.VolumeSnapshots(e.ns).Update(e.ctx, got, metav1.UpdateOptions{})
				_ = api.VolumeSnapshots(e.ns).Delete(e.ctx, name, metav1.DeleteOptions{})
			}
		}
		if got, err := api.VolumeSnapshotContents().Get(e.ctx, contentName, metav1.GetOptions{}); err == nil {
			got.Finalizers = nil
			_, _ = api.VolumeSnapshotContents().Update(e.ctx, got, metav1.UpdateOptions{})
			_ = api.VolumeSnapshotContents().Delete(e.ctx, contentName, metav1.DeleteOptions{})
		}
		if err := ep.DeleteSnapshot(e.ctx, handle, nil); err != nil {
			t.Errorf("delete backend snapshot %s: %v", handle, err)
		}
		ep.Close()
	})

	summary := func() explain.SnapshotReport {
		t.Helper()
		e.explain("vs", e.ns+"/nightly") // both formats, widths checked
		r, err := inspect.Report(e.ctx, e.client, "volumesnapshot", "nightly", e.ns)
		if err != nil {
			t.Fatal(err)
		}
		return r.(explain.SnapshotReport)
	}
	want := func(r explain.SnapshotReport, parts ...string) {
		t.Helper()
		for _, p := range parts {
			if !strings.Contains(r.Summary, p) {
				t.Errorf("summary %q, want %q", r.Summary, p)
			}
		}
	}
	want(summary(), "Not ready: waiting for the snapshot loop to create its content "+contentName)

	content := &snapv1.VolumeSnapshotContent{ObjectMeta: metav1.ObjectMeta{Name: contentName, Finalizers: []string{snapshotapi.ContentFinalizer}},
		Spec: snapv1.VolumeSnapshotContentSpec{Driver: hostpath.NetworkDriverName, DeletionPolicy: snapv1.VolumeSnapshotContentDelete,
			VolumeSnapshotClassName: ptr.To(bundle.NetworkSnapshotClass),
			Source:                  snapv1.VolumeSnapshotContentSource{VolumeHandle: ptr.To(pv.Spec.CSI.VolumeHandle)},
			VolumeSnapshotRef: corev1.ObjectReference{Kind: "VolumeSnapshot", APIVersion: "snapshot.storage.k8s.io/v1",
				Namespace: e.ns, Name: vs.Name, UID: vs.UID}}}
	if content, err = api.VolumeSnapshotContents().Create(e.ctx, content, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	want(summary(), "Not ready: waiting for the snapshotter: ", "no snapshotter is serving "+hostpath.NetworkDriverName+": no heartbeat")

	content.Status = &snapv1.VolumeSnapshotContentStatus{SnapshotHandle: ptr.To(handle), ReadyToUse: ptr.To(false), RestoreSize: ptr.To[int64](1 << 30)}
	if content, err = api.VolumeSnapshotContents().UpdateStatus(e.ctx, content, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	want(summary(), "has taken snapshot "+handle+" and reports it not ready yet")

	content.Status.ReadyToUse = ptr.To(true)
	if _, err = api.VolumeSnapshotContents().UpdateStatus(e.ctx, content, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	vs.Status = &snapv1.VolumeSnapshotStatus{BoundVolumeSnapshotContentName: ptr.To(contentName), ReadyToUse: ptr.To(true),
		RestoreSize: ptr.To(resource.MustParse("1Gi"))}
	if vs, err = api.VolumeSnapshots(e.ns).UpdateStatus(e.ctx, vs, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	r := summary()
	want(r, "Ready: backend snapshot "+handle+" of "+hostpath.NetworkDriverName+", restore size 1Gi.")
	if r.Content == nil || r.Content.SnapshotState != "Bound" || r.Class == nil || r.Class.Name != bundle.NetworkSnapshotClass {
		t.Errorf("content %+v, class %+v", r.Content, r.Class)
	}

	e.claim("restore", "1Gi", bundle.NetworkClass, func(c *corev1.PersistentVolumeClaim) {
		c.Spec.DataSourceRef = &corev1.TypedObjectReference{APIGroup: ptr.To(snapshotapi.Group), Kind: snapshotapi.KindSnapshot, Name: "nightly"}
	})
	if err := api.VolumeSnapshots(e.ns).Delete(e.ctx, "nightly", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	r = summary()
	want(r, "Being deleted; volumesnapshot-as-source-protection keeps it while "+e.ns+"/restore restore from it",
		"volumesnapshot-bound-protection keeps it until its content "+contentName+" (Delete) is deleted")
	if len(r.RestoredBy) != 1 || len(r.Finalizers) != 3 {
		t.Errorf("restored by %v, finalizers %+v", r.RestoredBy, r.Finalizers)
	}

	table, _ := e.explain("vsc", contentName)
	if !strings.Contains(table, "Ready: backend snapshot") || !strings.Contains(table, snapshotapi.ContentFinalizer) {
		t.Errorf("content report:\n%s", table)
	}
	if _, err := inspect.Report(e.ctx, e.client, "vs", "nope", e.ns); err == nil || err.Error() != "volumesnapshot "+e.ns+"/nope not found" {
		t.Errorf("a snapshot that does not exist: %v", err)
	}
}

// With the snapshot loops running, a snapshot of a bound claim becomes
// ready and its report says so; doctor and the invariants find nothing
// wrong with it, nor once it is deleted.
func TestExplainSnapshotTheLoopsMade(t *testing.T) {
	e := newEnv(t)
	api := snapclient.NewForConfigOrDie(stack.CP.RESTConfig).SnapshotV1()
	e.claim("src", "1Gi", bundle.NetworkClass)
	e.eventually("claim src Bound", e.claimPhase("src", corev1.ClaimBound))
	vs := &snapv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "made"},
		Spec: snapv1.VolumeSnapshotSpec{Source: snapv1.VolumeSnapshotSource{PersistentVolumeClaimName: ptr.To("src")}}}
	if _, err := api.VolumeSnapshots(e.ns).Create(e.ctx, vs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	var r explain.SnapshotReport
	e.eventually("snapshot made ready, as explain says", func() string {
		rep, err := inspect.Report(e.ctx, e.client, "vs", "made", e.ns)
		if err != nil {
			return err.Error()
		}
		if r = rep.(explain.SnapshotReport); !r.Ready {
			return r.Summary
		}
		return ""
	})
	if !strings.HasPrefix(r.Summary, "Ready: backend snapshot ") || r.Class == nil || r.Class.Name != bundle.NetworkSnapshotClass || r.Content == nil || r.Content.SnapshotState != "Bound" {
		t.Errorf("report %+v", r)
	}
	e.explain("vs", e.ns+"/made")
	problems := func() string {
		s, err := stack.ReadInvariants(e.ctx)
		if err != nil {
			return err.Error()
		}
		var out []string
		for _, v := range invariants.Check(s, invariants.Expect{}) {
			if strings.Contains(v, "snapshot") || strings.Contains(v, "Snapshot") {
				out = append(out, v)
			}
		}
		return strings.Join(out, "; ")
	}
	if p := problems(); p != "" {
		t.Errorf("snapshot invariants with a ready snapshot: %s", p)
	}
	if err := api.VolumeSnapshots(e.ns).Delete(e.ctx, "made", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("snapshot made and its content gone", func() string {
		if _, err := api.VolumeSnapshots(e.ns).Get(e.ctx, "made", metav1.GetOptions{}); err == nil {
			return "snapshot still there"
		}
		if _, err := api.VolumeSnapshotContents().Get(e.ctx, r.Content.Name, metav1.GetOptions{}); err == nil {
			return "content still there"
		}
		return ""
	})
	if p := problems(); p != "" {
		t.Errorf("snapshot invariants once it is deleted: %s", p)
	}
}
