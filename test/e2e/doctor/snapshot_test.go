package doctor

import (
	"strings"
	"testing"

	csispec "github.com/container-storage-interface/spec/lib/go/csi"
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	snapclient "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/bundle"
	"github.com/volplane/volplane/internal/checkup"
	"github.com/volplane/volplane/internal/csi"
	"github.com/volplane/volplane/internal/doctor"
	"github.com/volplane/volplane/internal/hostpath"
	"github.com/volplane/volplane/internal/invariants"
	"github.com/volplane/volplane/internal/snapshotapi"
)

// snapWorld is what a snapshot test made behind the loops' back: backend
// snapshots on the network driver and snapshot API objects, all removed
// when the test ends.
type snapWorld struct {
	e        *env
	api      snapclient.Interface
	ep       *csi.Endpoint
	handles  []string
	contents []string
	snaps    []string
}

func newSnapWorld(e *env) *snapWorld {
	e.t.Helper()
	var addr string
	for _, ep := range stack.Drivers.Endpoints {
		if strings.HasSuffix(ep, "/network.sock") {
			addr = ep
		}
	}
	ep, err := csi.Dial(e.ctx, addr, nil)
	e.must(err)
	w := &snapWorld{e: e, api: snapclient.NewForConfigOrDie(stack.CP.RESTConfig), ep: ep}
	e.t.Cleanup(w.cleanUp)
	return w
}

// backendSnapshot takes a snapshot of volume on the network driver.
func (w *snapWorld) backendSnapshot(name, volume string) string {
	w.e.t.Helper()
	s, err := w.ep.CreateSnapshot(w.e.ctx, &csispec.CreateSnapshotRequest{Name: name, SourceVolumeId: volume})
	w.e.must(err)
	w.handles = append(w.handles, s.GetSnapshotId())
	return s.GetSnapshotId()
}

// content makes a dynamic content of the network driver bound to a
// snapshot (of uid) of the test's namespace, with the snapshotter's
// finalizer and, if handle is not "", a ready status.
func (w *snapWorld) content(name, snapshot string, uid types.UID, policy snapv1.DeletionPolicy, volume, handle string) {
	w.e.t.Helper()
	c := &snapv1.VolumeSnapshotContent{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: []string{snapshotapi.ContentFinalizer}},
		Spec: snapv1.VolumeSnapshotContentSpec{Driver: hostpath.NetworkDriverName, DeletionPolicy: policy,
			Source:            snapv1.VolumeSnapshotContentSource{VolumeHandle: ptr.To(volume)},
			VolumeSnapshotRef: corev1.ObjectReference{Kind: "VolumeSnapshot", Namespace: w.e.ns, Name: snapshot, UID: uid}}}
	c, err := w.api.SnapshotV1().VolumeSnapshotContents().Create(w.e.ctx, c, metav1.CreateOptions{})
	w.e.must(err)
	w.contents = append(w.contents, name)
	if handle != "" {
		c.Status = &snapv1.VolumeSnapshotContentStatus{SnapshotHandle: ptr.To(handle), ReadyToUse: ptr.To(true)}
		_, err = w.api.SnapshotV1().VolumeSnapshotContents().UpdateStatus(w.e.ctx, c, metav1.UpdateOptions{})
		w.e.must(err)
	}
}

func (w *snapWorld) cleanUp() {
	ctx, api := w.e.ctx, w.api.SnapshotV1()
	for _, name := range w.snaps {
		if vs, err := api.VolumeSnapshots(w.e.ns).Get(ctx, name, metav1.GetOptions{}); err == nil {
			vs.Finalizers = nil
			_, _ = api.VolumeSnapshots(w.e.ns).Update(ctx, vs, metav1.UpdateOptions{})
			_ = api.VolumeSnapshots(w.e.ns).Delete(ctx, name, metav1.DeleteOptions{})
		}
	}
	for _, name := range w.contents {
		if c, err := api.VolumeSnapshotContents().Get(ctx, name, metav1.GetOptions{}); err == nil {
			c.Finalizers = nil
			_, _ = api.VolumeSnapshotContents().Update(ctx, c, metav1.UpdateOptions{})
			_ = api.VolumeSnapshotContents().Delete(ctx, name, metav1.DeleteOptions{})
		}
	}
	for _, h := range w.handles {
		if err := w.ep.DeleteSnapshot(ctx, h, nil); err != nil {
			w.e.t.Errorf("delete backend snapshot %s: %v", h, err)
		}
	}
	w.ep.Close()
}

// Doctor finds a backend snapshot no content names (and offers to adopt
// it, never to delete it), contents whose snapshot is gone (Retain:
// information; Delete: a problem) and a snapshot stuck deleting, whose
// finalizer fix pasted on the API server removes only that finalizer; the
// invariant checker reads the same state through ReadInvariants.
func TestDoctorFindsSnapshotProblemsWithSafeFixes(t *testing.T) {
	e := newEnv(t)
	t.Cleanup(func() { e.cleanUp() })
	e.claim("db", "1Gi", bundle.NetworkClass)
	e.eventually("claim db Bound", e.claimPhase("db", corev1.ClaimBound))
	volume := e.getVolume(e.getClaim("db").Spec.VolumeName).Spec.CSI.VolumeHandle
	e.must(stack.StopLoops())
	t.Cleanup(stack.StartLoops)
	w := newSnapWorld(e)

	orphan := w.backendSnapshot("doctor-orphan", volume)
	kept := w.backendSnapshot("doctor-kept", volume)
	w.content("doctor-retained", "gone", "uid-gone", snapv1.VolumeSnapshotContentRetain, volume, kept)
	w.content("doctor-left", "left", "uid-left", snapv1.VolumeSnapshotContentDelete, volume, "")
	vs := &snapv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "held", Finalizers: []string{snapshotapi.AsSourceFinalizer}},
		Spec: snapv1.VolumeSnapshotSpec{Source: snapv1.VolumeSnapshotSource{PersistentVolumeClaimName: ptr.To("db")}}}
	_, err := w.api.SnapshotV1().VolumeSnapshots(e.ns).Create(e.ctx, vs, metav1.CreateOptions{})
	e.must(err)
	w.snaps = append(w.snaps, "held")
	e.must(w.api.SnapshotV1().VolumeSnapshots(e.ns).Delete(e.ctx, "held", metav1.DeleteOptions{}))

	r := e.report(stack.Drivers.Endpoints)
	found := map[doctor.Kind][]doctor.Finding{}
	for _, f := range r.Findings {
		found[f.Kind] = append(found[f.Kind], f)
	}
	if fs := found[doctor.KindOrphanedBackendSnapshot]; len(fs) != 1 || fs[0].Object.Name != orphan ||
		len(fs[0].Fixes) != 1 || !strings.Contains(fs[0].Fixes[0].Command, "deletionPolicy: Retain") {
		t.Errorf("orphaned backend snapshots: %+v", fs)
	}
	if fs := found[doctor.KindOrphanedContent]; len(fs) != 2 ||
		fs[0].Object.Name != "doctor-left" || fs[0].Severity != doctor.SeverityProblem ||
		fs[1].Object.Name != "doctor-retained" || fs[1].Severity != doctor.SeverityInfo {
		t.Errorf("contents whose snapshot is gone: %+v", fs)
	}
	var patch string
	for _, f := range found[doctor.KindStuckDeleting] {
		if f.Object.Kind == doctor.ObjectSnapshot && f.Object.Name == "held" && len(f.Fixes) == 1 {
			patch = f.Fixes[0].Command
		}
	}
	prefix := "kubectl patch volumesnapshot -n " + e.ns + " held --type=json -p '"
	if !strings.HasPrefix(patch, prefix) {
		t.Fatalf("no finalizer fix for the stuck snapshot: %+v", found[doctor.KindStuckDeleting])
	}

	s, err := checkup.ReadInvariants(e.ctx, e.client, stack.Drivers.Endpoints)
	e.must(err)
	if !s.SnapshotsRead {
		t.Error("ReadInvariants did not read the snapshot API")
	}
	violations := strings.Join(invariants.Check(s, invariants.Expect{}), "\n")
	for _, want := range []string{"backend snapshot " + orphan + " of " + hostpath.NetworkDriverName,
		"VolumeSnapshotContent doctor-left (Delete): its snapshot " + e.ns + "/left (uid uid-left) is gone",
		"VolumeSnapshot " + e.ns + "/held is still Terminating"} {
		if !strings.Contains(violations, want) {
			t.Errorf("invariants: no %q in\n%s", want, violations)
		}
	}
	if strings.Contains(violations, "backend snapshot "+kept+" ") {
		t.Errorf("a backend snapshot a content names is reported:\n%s", violations)
	}

	body := strings.TrimSuffix(strings.TrimPrefix(patch, prefix), "'")
	_, err = w.api.SnapshotV1().VolumeSnapshots(e.ns).Patch(e.ctx, "held", types.JSONPatchType, []byte(body), metav1.PatchOptions{})
	e.must(err)
	e.eventually("snapshot held gone", func() string {
		_, err := w.api.SnapshotV1().VolumeSnapshots(e.ns).Get(e.ctx, "held", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return ""
		}
		return "still there"
	})
}
