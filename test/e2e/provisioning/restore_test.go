package provisioning

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/internal/snapshotapi"
	"github.com/volplane/volplane/internal/stacktest"
)

func resourceBytes(n int64) *resource.Quantity { return resource.NewQuantity(n, resource.BinarySI) }

// restoreText is what the origin held when its snapshot was taken.
const restoreText = "as the snapshot saw it\n"

// snapshotOfOrigin provisions claim origin, writes into it, snapshots it on
// its node's driver, changes the file afterwards, and pre-provisions the
// VolumeSnapshot snap for that snapshot, ready or not.
func (e *env) snapshotOfOrigin(ready bool) (backendVolume, string, int64) {
	e.t.Helper()
	_, _, origin := e.provisioned("origin", classImmediate)
	e.writeFile(origin, "data", restoreText)
	handle, size := e.backendSnapshot(origin, "snapshot-"+e.ns)
	e.writeFile(origin, "data", "written after the snapshot\n")
	e.preProvisioned("snap", handle, size, ready)
	return origin, handle, size
}

// volumeOf is the backend volume of a provisioned PV.
func (e *env) volumeOf(pv *corev1.PersistentVolume) backendVolume {
	e.t.Helper()
	for _, v := range e.backendVolumes() {
		if v.id == pv.Spec.CSI.VolumeHandle {
			return v
		}
	}
	e.t.Fatalf("no backend volume %s of PV %s", pv.Spec.CSI.VolumeHandle, pv.Name)
	return backendVolume{}
}

// A claim whose data source is a bound, ready VolumeSnapshot gets a volume
// restored from the snapshot's backend snapshot: on the node that holds
// the snapshot (the content names no source volume: the provisioner asks
// each node's driver), holding the data as it was when the snapshot was
// taken, as large as the claim asks (larger than the snapshot). The
// provisioner's finalizer on the snapshot is gone once the claim is Bound.
func TestClaimRestoredFromAPreProvisionedSnapshotHoldsItsData(t *testing.T) {
	e := newEnv(t)
	origin, _, size := e.snapshotOfOrigin(true)
	e.createClaim(e.claim("restored", classImmediate, "300Mi", restoredFrom("snap")))
	c, pv := e.waitBound("restored")
	restored := e.volumeOf(pv)
	if restored.node != origin.node {
		t.Errorf("restored on %s, the snapshot is on %s", restored.node, origin.node)
	}
	if got := readFile(restored, "data"); got != restoreText {
		t.Errorf("the restored volume holds %q, want %q", got, restoreText)
	}
	if want := int64(300 << 20); restored.bytes < want || restored.bytes <= size {
		t.Errorf("restored volume of %d bytes, want %d (the snapshot has %d)", restored.bytes, want, size)
	}
	e.expectProvisionedPV(pv, c, restored, corev1.PersistentVolumeReclaimDelete)
	e.waitClaimEvent("restored", corev1.EventTypeNormal, "ProvisioningSucceeded", "Successfully provisioned volume "+pv.Name)
	e.eventually("the provisioner's finalizer gone from the snapshot", func() string {
		if e.holdsSourceFinalizer("snap") {
			return fmt.Sprintf("finalizers %v", e.snapshotFinalizers("snap"))
		}
		return ""
	})
}

// A restore waits, with the reference's reasons, for a snapshot that is
// not ready, and refuses a request smaller than the snapshot; neither
// puts the provisioner's finalizer on the snapshot (nothing is being made
// from it: external-provisioner#1507 holds it for such claims). Once the
// snapshot is ready the claim is restored.
func TestRestoreWaitsForTheSnapshotWithoutHoldingIt(t *testing.T) {
	e := newEnv(t)
	origin, _, size := e.snapshotOfOrigin(false)
	e.createClaim(e.claim("restored", classImmediate, "100Mi", restoredFrom("snap")))
	e.waitClaimEvent("restored", corev1.EventTypeWarning, "ProvisioningFailed",
		"error getting handle for DataSource Type VolumeSnapshot by Name snap: snapshot snap is not Ready")
	e.createClaim(e.claim("small", classImmediate, "50Mi", restoredFrom("snap")))
	vs, err := e.snapshots().SnapshotV1().VolumeSnapshots(e.ns).Get(e.ctx, "snap", metav1.GetOptions{})
	e.noError(err, "get snapshot")
	content, err := e.snapshots().SnapshotV1().VolumeSnapshotContents().Get(e.ctx, e.ns+"-snap", metav1.GetOptions{})
	e.noError(err, "get content")
	e.setReady(vs, content, size, true)
	_, pv := e.waitBound("restored")
	if v := e.volumeOf(pv); v.node != origin.node || readFile(v, "data") != restoreText {
		t.Errorf("restored volume %v holds %q", v, readFile(v, "data"))
	}
	e.waitClaimEvent("small", corev1.EventTypeWarning, "ProvisioningFailed", fmt.Sprintf(
		"error getting handle for DataSource Type VolumeSnapshot by Name snap: requested volume size %d is less than the size %d for the source snapshot snap", 50<<20, size))
	e.holds("the refused claim holds no finalizer on the snapshot", settleTimeout, func() string {
		if e.holdsSourceFinalizer("snap") {
			return fmt.Sprintf("finalizers %v", e.snapshotFinalizers("snap"))
		}
		if c := e.getClaim("small"); slices.Contains(c.Finalizers, claimFinalizer) || c.Status.Phase != corev1.ClaimPending {
			return fmt.Sprintf("claim small: %s, finalizers %v", c.Status.Phase, c.Finalizers)
		}
		return ""
	})
}

// While a volume is being made from a source (its CreateVolume answered,
// its PV not created yet: every PV create fails), the source carries the
// provisioner's finalizer: the snapshot restored from, the claim cloned
// from. When the next provisioner finishes the clone, the source claim's
// finalizer goes; when the restoring claim is deleted instead, its volume
// is cleaned up and the snapshot's finalizer goes too.
func TestSourcesAreHeldWhileAVolumeIsMadeFromThem(t *testing.T) {
	e := newEnv(t)
	e.snapshotOfOrigin(true)
	withoutSharedLoops(t)
	rc := stacktest.ControlPlane(t).RESTConfig
	runLoops(t, rc, binderOnly...)
	refusePVs := &faultyWrites{matches: func(req *http.Request) bool {
		return req.Method == http.MethodPost && strings.HasSuffix(req.URL.Path, "/persistentvolumes")
	}}
	l := startLoops(refusePVs.config(rc), provisionerOnly...)
	e.createClaim(e.claim("restored", classImmediate, "100Mi", restoredFrom("snap")))
	e.createClaim(e.claim("copy", classImmediate, "100Mi", clonedFrom("origin")))
	e.eventually("both sources held while their volumes are made", func() string {
		switch {
		case !e.holdsSourceFinalizer("snap"):
			return fmt.Sprintf("snapshot finalizers %v", e.snapshotFinalizers("snap"))
		case !slices.Contains(e.getClaim("origin").Finalizers, snapshotapi.CloningFinalizer):
			return fmt.Sprintf("origin finalizers %v", e.getClaim("origin").Finalizers)
		case len(e.newVolumes()) < 3:
			return fmt.Sprintf("backend volumes %v", e.newVolumes())
		}
		return ""
	})
	if err := l.Stop(); err != nil {
		t.Logf("provisioner without PVs: %v", err)
	}
	e.deleteClaim("restored")
	runLoops(t, rc, provisionerOnly...)
	e.waitBound("copy")
	e.waitClaimGone("restored")
	e.eventually("both sources released", func() string {
		if e.holdsSourceFinalizer("snap") {
			return fmt.Sprintf("snapshot finalizers %v", e.snapshotFinalizers("snap"))
		}
		if f := e.getClaim("origin").Finalizers; slices.Contains(f, snapshotapi.CloningFinalizer) {
			return fmt.Sprintf("origin finalizers %v", f)
		}
		if vols := e.newVolumes(); len(vols) != 2 {
			return fmt.Sprintf("backend volumes %v, want the origin and the copy", vols)
		}
		return ""
	})
}
