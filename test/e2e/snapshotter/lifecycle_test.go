package snapshotter

import (
	"context"
	"fmt"
	"slices"
	"testing"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/bundle"
	"github.com/volplane/volplane/internal/controller/manager"
	"github.com/volplane/volplane/internal/hostpath"
	"github.com/volplane/volplane/internal/snapshotapi"
	"github.com/volplane/volplane/internal/stacktest"
	"github.com/volplane/volplane/test/e2e/support"
)

// A user's VolumeSnapshot of a provisioned claim, through the binder, the
// provisioner, the snapshot loop and this loop: ready with the driver's
// snapshot, and its deletion deletes that snapshot.
func TestVolumeSnapshotReadyThenDeletedLeavesNoBackendSnapshot(t *testing.T) {
	ctx := context.Background()
	cfg := loopsConfig()
	cfg.Controllers = []string{manager.Binder, manager.Provisioner, manager.Snapshot}
	rest := stacktest.StartLoops(cfg)
	t.Cleanup(func() { _ = rest.Stop() })
	running := func() error {
		if err := rest.EndedEarly(); err != nil {
			return err
		}
		return alive()
	}
	kube := bed.cp.Client
	ns := stacktest.Namespace(t)
	claim := support.BoundClaims(t, kube, running, support.Claim(ns, "data", bundle.ImmediateClass, "1Mi"))[0]
	pv, err := kube.CoreV1().PersistentVolumes().Get(ctx, claim.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	node := -1 // the node the provisioner put the volume on
	if a := pv.Spec.NodeAffinity; a != nil && a.Required != nil && len(a.Required.NodeSelectorTerms) == 1 {
		for _, r := range a.Required.NodeSelectorTerms[0].MatchExpressions {
			if r.Key == hostpath.TopologyKey && len(r.Values) == 1 {
				node = slices.Index(bed.nodes, r.Values[0])
			}
		}
	}
	if node < 0 {
		t.Fatalf("PV %s is pinned to no node of the bed: %+v", pv.Name, pv.Spec.NodeAffinity)
	}
	vs, err := bed.snaps.SnapshotV1().VolumeSnapshots(ns).Create(ctx, support.Snapshot(ns, "snap", "data", nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	content := snapshotapi.ContentName(vs.UID)
	support.WaitSnapshot(t, bed.snaps, running, "snapshot ready", ns, "snap", func(s *snapv1.VolumeSnapshot) string {
		if st := s.Status; st == nil || !ptr.Deref(st.ReadyToUse, false) || st.RestoreSize == nil || st.CreationTime == nil {
			return fmt.Sprintf("status %+v", st)
		}
		return ""
	})
	id := *get(t, content).Status.SnapshotHandle
	if !holds(t, node, id) {
		t.Fatalf("the driver of %s holds no snapshot %s", bed.nodes[node], id)
	}

	if err := bed.snaps.SnapshotV1().VolumeSnapshots(ns).Delete(ctx, "snap", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	stacktest.Eventually(t, "snapshot and content gone", support.SnapshotAndContentGone(bed.snaps, ns, "snap", content), running)
	if holds(t, node, id) {
		t.Fatalf("backend snapshot %s left behind after its VolumeSnapshot was deleted", id)
	}
}
