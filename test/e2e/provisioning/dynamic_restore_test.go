package provisioning

import (
	"fmt"
	"slices"
	"testing"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/bundle"
	"github.com/volplane/volplane/internal/controller/manager"
	"github.com/volplane/volplane/internal/stacktest"
)

// Claim → VolumeSnapshot → restore, end to end with the snapshot loops
// (snapshot and snapshotter) beside the suite's binder and provisioner: a
// dynamic snapshot of a claim, taken by its node's driver, restored into a
// larger claim on that node, holding the data as the snapshot saw it; the
// provisioner's finalizer off the snapshot once restored; the snapshot
// then deleted with its content and backend snapshot.
func TestDynamicSnapshotRestoredIntoALargerClaim(t *testing.T) {
	e := newEnv(t)
	snaps := e.snapshots()
	runLoops(t, stacktest.ControlPlane(t).RESTConfig, manager.Snapshot, manager.Snapshotter)
	_, _, origin := e.provisioned("origin", classImmediate)
	e.writeFile(origin, "data", restoreText)

	vs := &snapv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "snap", Namespace: e.ns},
		Spec: snapv1.VolumeSnapshotSpec{VolumeSnapshotClassName: ptr.To(bundle.SnapshotClass),
			Source: snapv1.VolumeSnapshotSource{PersistentVolumeClaimName: ptr.To("origin")}}}
	_, err := snaps.SnapshotV1().VolumeSnapshots(e.ns).Create(e.ctx, vs, metav1.CreateOptions{})
	e.noError(err, "create snapshot")
	e.eventually("snapshot snap ready", func() string {
		vs, err := snaps.SnapshotV1().VolumeSnapshots(e.ns).Get(e.ctx, "snap", metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		if s := vs.Status; s == nil || s.ReadyToUse == nil || !*s.ReadyToUse {
			return fmt.Sprintf("status %+v", s)
		}
		return ""
	})
	e.writeFile(origin, "data", "written after the snapshot\n")

	e.createClaim(e.claim("restored", classImmediate, "300Mi", restoredFrom("snap")))
	_, pv := e.waitBound("restored")
	restored := e.volumeOf(pv)
	if restored.node != origin.node || restored.bytes < 300<<20 {
		t.Errorf("restored volume %v of %d bytes, want on %s with 300Mi", restored, restored.bytes, origin.node)
	}
	if got := readFile(restored, "data"); got != restoreText {
		t.Errorf("the restored volume holds %q, want %q", got, restoreText)
	}
	e.eventually("the provisioner's finalizer gone from the snapshot", func() string {
		if e.holdsSourceFinalizer("snap") {
			return fmt.Sprintf("finalizers %v", e.snapshotFinalizers("snap"))
		}
		return ""
	})

	e.noError(snaps.SnapshotV1().VolumeSnapshots(e.ns).Delete(e.ctx, "snap", metav1.DeleteOptions{}), "delete snapshot")
	e.eventually("snapshot snap gone with its content and backend snapshot", func() string {
		vs, err := snaps.SnapshotV1().VolumeSnapshots(e.ns).Get(e.ctx, "snap", metav1.GetOptions{})
		if err == nil {
			return fmt.Sprintf("snapshot still there, finalizers %v", vs.Finalizers)
		}
		if !apierrors.IsNotFound(err) {
			return err.Error()
		}
		contents, err := snaps.SnapshotV1().VolumeSnapshotContents().List(e.ctx, metav1.ListOptions{})
		if err != nil {
			return err.Error()
		}
		if i := slices.IndexFunc(contents.Items, func(c snapv1.VolumeSnapshotContent) bool {
			return c.Spec.VolumeSnapshotRef.Namespace == e.ns
		}); i >= 0 {
			return "content " + contents.Items[i].Name + " still there"
		}
		if n := e.backendSnapshotsOf(origin); n > 0 {
			return fmt.Sprintf("%d backend snapshots left on %s", n, origin.node)
		}
		return ""
	})
}
