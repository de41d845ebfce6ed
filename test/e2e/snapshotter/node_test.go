package snapshotter

import (
	"testing"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"

	"github.com/volplane/volplane/internal/controller/provisioner"
	"github.com/volplane/volplane/internal/snapshotapi"
	"github.com/volplane/volplane/internal/stacktest"
	"github.com/volplane/volplane/test/e2e/support"
)

// In node deployment each node's snapshotter serves only its node's
// contents: those labelled with its name (the reference's distributed
// snapshotting) and unlabelled ones whose source volume is on its node.
func TestNodeDeploymentServesOnlyItsNode(t *testing.T) {
	if err := bed.loops.Stop(); err != nil {
		t.Fatalf("stop the central loops: %v", err)
	}
	bed.loops = nil
	var perNode []*stacktest.Loops
	for i, node := range bed.nodes {
		cfg := loopsConfig()
		cfg.CSIEndpoints = []string{bed.endpoints[i]}
		cfg.NodeDeployment = &provisioner.NodeDeployment{NodeName: node}
		perNode = append(perNode, stacktest.StartLoops(cfg))
	}
	nodeAlive := func() error {
		for _, l := range perNode {
			if err := l.EndedEarly(); err != nil {
				return err
			}
		}
		return nil
	}
	t.Cleanup(func() {
		for _, l := range perNode {
			_ = l.Stop()
		}
		bed.loops = stacktest.StartLoops(loopsConfig())
	})

	ns := stacktest.Namespace(t)
	secret(t, ns)
	unlabelled := dynamicContent(ns, "by-source", makeVolume(t, 1), snapv1.VolumeSnapshotContentDelete)
	labelled := dynamicContent(ns, "by-label", makeVolume(t, 0), snapv1.VolumeSnapshotContentDelete)
	labelled.Labels = map[string]string{snapshotapi.ManagedByLabel: bed.nodes[0]}
	for _, tc := range []struct {
		c    *snapv1.VolumeSnapshotContent
		node int
	}{{unlabelled, 1}, {labelled, 0}} {
		create(t, tc.c)
		support.WaitContent(t, bed.snaps, nodeAlive, tc.c.Name+" ready", tc.c.Name, support.ContentReady)
		calls := bed.calls.of("CreateSnapshot", snapshotapi.BackendName(tc.c.Spec.VolumeSnapshotRef.UID))
		if len(calls) != 1 || calls[0].node != bed.nodes[tc.node] {
			t.Fatalf("CreateSnapshot calls %+v: want one, by %s", calls, bed.nodes[tc.node])
		}
		id := *get(t, tc.c.Name).Status.SnapshotHandle
		deleteAsSnapshotController(t, tc.c.Name)
		stacktest.Eventually(t, tc.c.Name+" gone", contentGone(tc.c.Name), nodeAlive)
		if holds(t, tc.node, id) {
			t.Fatalf("backend snapshot %s leaked", id)
		}
	}
}
