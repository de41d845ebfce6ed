package snapshotter

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/bundle"
	"github.com/volplane/volplane/internal/controller/manager"
	"github.com/volplane/volplane/internal/controller/provisioner"
	"github.com/volplane/volplane/internal/explain"
	"github.com/volplane/volplane/internal/heartbeat"
	"github.com/volplane/volplane/internal/hostpath"
	"github.com/volplane/volplane/internal/inspect"
	"github.com/volplane/volplane/internal/snapshotapi"
	"github.com/volplane/volplane/internal/stacktest"
	"github.com/volplane/volplane/test/e2e/support"
)

// Distributed snapshotting, as `volplane controller` runs it in deploy/:
// the central snapshot loop labels a user's dynamic content with the node
// of its source volume, and of the snapshotters of a node deployment only
// that node's takes it; a content labelled with another node is never
// touched by the node that holds its volume. Each node's snapshotter beats
// for the driver, and explain says which ones serve it.
func TestDistributedSnapshottingEachNodeTakesOnlyItsLabelledContents(t *testing.T) {
	ctx := context.Background()
	if err := bed.loops.Stop(); err != nil {
		t.Fatalf("stop the central snapshotter: %v", err)
	}
	bed.loops = nil
	central := loopsConfig()
	central.Controllers = []string{manager.Binder, manager.Provisioner, manager.Snapshot}
	rest := stacktest.StartLoops(central)
	var perNode []*stacktest.Loops
	for i, node := range bed.nodes {
		cfg := loopsConfig()
		cfg.CSIEndpoints = []string{bed.endpoints[i]}
		cfg.NodeDeployment = &provisioner.NodeDeployment{NodeName: node}
		perNode = append(perNode, stacktest.StartLoops(cfg))
	}
	stopNodes := func() {
		for _, l := range perNode {
			_ = l.Stop()
		}
		perNode = nil
	}
	t.Cleanup(func() {
		stopNodes()
		_ = rest.Stop()
		bed.loops = stacktest.StartLoops(loopsConfig())
	})
	running := func() error {
		for _, l := range append([]*stacktest.Loops{rest}, perNode...) {
			if err := l.EndedEarly(); err != nil {
				return err
			}
		}
		return nil
	}
	snapshotters := func() explain.Provisioner {
		t.Helper()
		leases, err := inspect.RoleLeases(ctx, bed.cp.Client.CoordinationV1(), heartbeat.Snapshotter, hostpath.DriverName)
		if err != nil {
			t.Fatal(err)
		}
		return explain.SnapshotterPresence(hostpath.DriverName, leases, time.Now())
	}
	stacktest.Eventually(t, "a snapshotter heartbeat from each node", func() string {
		if p := snapshotters(); !p.Serving || !slices.Equal(p.Nodes, slices.Sorted(slices.Values(bed.nodes))) ||
			!strings.HasPrefix(p.Note, hostpath.DriverName+" is served by 2 snapshotters (") {
			return fmt.Sprintf("%+v", p)
		}
		return ""
	}, running)

	// A user's snapshot: labelled with its volume's node, taken there.
	kube := bed.cp.Client
	ns := stacktest.Namespace(t)
	if _, err := kube.CoreV1().PersistentVolumeClaims(ns).Create(ctx, support.Claim(ns, "data", bundle.ImmediateClass, "1Mi"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	stacktest.Eventually(t, "claim bound", stacktest.ClaimPhase(ctx, kube, ns, "data", corev1.ClaimBound), running)
	claim, err := kube.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pv, err := kube.CoreV1().PersistentVolumes().Get(ctx, claim.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	owner := pinnedTo(pv)
	if owner < 0 {
		t.Fatalf("PV %s is pinned to no node of the bed: %+v", pv.Name, pv.Spec.NodeAffinity)
	}
	vs := &snapv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "snap"},
		Spec: snapv1.VolumeSnapshotSpec{Source: snapv1.VolumeSnapshotSource{PersistentVolumeClaimName: ptr.To("data")}}}
	if vs, err = bed.snaps.SnapshotV1().VolumeSnapshots(ns).Create(ctx, vs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = bed.snaps.SnapshotV1().VolumeSnapshots(ns).Delete(context.Background(), "snap", metav1.DeleteOptions{})
	})
	stacktest.Eventually(t, "snapshot ready", func() string {
		s, err := bed.snaps.SnapshotV1().VolumeSnapshots(ns).Get(ctx, "snap", metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		if st := s.Status; st == nil || !ptr.Deref(st.ReadyToUse, false) {
			return fmt.Sprintf("status %+v", st)
		}
		return ""
	}, running)
	content := get(t, snapshotapi.ContentName(vs.UID))
	if got := content.Labels[snapshotapi.ManagedByLabel]; got != bed.nodes[owner] {
		t.Errorf("content %s labelled %s=%q, want the volume's node %s", content.Name, snapshotapi.ManagedByLabel, got, bed.nodes[owner])
	}
	calls := bed.calls.of("CreateSnapshot", snapshotapi.BackendName(vs.UID))
	if len(calls) != 1 || calls[0].node != bed.nodes[owner] {
		t.Errorf("CreateSnapshot calls %+v: want one, by %s", calls, bed.nodes[owner])
	}

	// A content labelled with the other node: the node holding its
	// volume leaves it alone; the labelled one, whose driver has no such
	// volume, fails.
	other := 1 - owner
	mislabelled := dynamicContent(ns, "mislabelled", makeVolume(t, owner), snapv1.VolumeSnapshotContentRetain)
	mislabelled.Labels = map[string]string{snapshotapi.ManagedByLabel: bed.nodes[other]}
	secret(t, ns)
	create(t, mislabelled)
	stacktest.Eventually(t, "the labelled node tried and failed", func() string {
		if st := get(t, mislabelled.Name).Status; st == nil || st.Error == nil {
			return fmt.Sprintf("status %+v", st)
		}
		return ""
	}, running)
	for _, c := range bed.calls.of("CreateSnapshot", snapshotapi.BackendName(mislabelled.Spec.VolumeSnapshotRef.UID)) {
		if c.node != bed.nodes[other] {
			t.Errorf("CreateSnapshot by %s of a content labelled %s", c.node, bed.nodes[other])
		}
	}

	// Stopped cleanly, the node snapshotters' heartbeats go at once.
	stopNodes()
	if p := snapshotters(); p.Serving || len(p.Nodes) > 0 ||
		p.Note != "no snapshotter is serving "+hostpath.DriverName+": no heartbeat or leader election Lease of it was found" {
		t.Errorf("after the node snapshotters stopped: %+v", p)
	}
}

// pinnedTo is the index in the bed of the node the PV's affinity names.
func pinnedTo(pv *corev1.PersistentVolume) int {
	if a := pv.Spec.NodeAffinity; a != nil && a.Required != nil && len(a.Required.NodeSelectorTerms) == 1 {
		for _, r := range a.Required.NodeSelectorTerms[0].MatchExpressions {
			if r.Key == hostpath.TopologyKey && len(r.Values) == 1 {
				return slices.Index(bed.nodes, r.Values[0])
			}
		}
	}
	return -1
}
