package snapshot

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/controller/manager"
	"github.com/volplane/volplane/internal/snapshotapi"
	"github.com/volplane/volplane/internal/stacktest"
	"github.com/volplane/volplane/test/e2e/support"
)

// With the real sidecar (the snapshotter loop, started for this test
// alone) and the bundled driver: a snapshot of a claim becomes ready with
// the driver's handle and size, the claim is released, and deleting the
// snapshot deletes its content and backend snapshot.
func TestSnapshotWithTheBundledDriver(t *testing.T) {
	ctx := context.Background()
	cfg := stack.LoopsConfig()
	cfg.Controllers = []string{manager.Snapshotter}
	sidecar := stacktest.StartLoops(cfg)
	t.Cleanup(func() {
		if err := sidecar.Stop(); err != nil {
			t.Errorf("snapshotter: %v", err)
		}
	})
	running := func() error {
		if err := sidecar.EndedEarly(); err != nil {
			return err
		}
		return alive()
	}
	ns := stacktest.Namespace(t)
	boundClaim(t, ns, "data")
	s := snapshotOf(t, ns, "snap", "data", nil)
	name := snapshotapi.ContentName(s.UID)
	var handle string
	stacktest.Eventually(t, "snapshot ready from the driver", func() string {
		s, err := getSnapshot(ns, "snap")
		if err != nil {
			return err.Error()
		}
		c, err := getContent(name)
		if err != nil {
			return err.Error()
		}
		if s.Status == nil || !ptr.Deref(s.Status.ReadyToUse, false) || s.Status.RestoreSize == nil || s.Status.CreationTime == nil ||
			c.Status == nil || ptr.Deref(c.Status.SnapshotHandle, "") == "" {
			return fmt.Sprintf("snapshot status %+v, content status %+v", s.Status, c.Status)
		}
		handle = *c.Status.SnapshotHandle
		if !backendHas(ctx, handle) {
			return "the driver does not list " + handle
		}
		return ""
	}, running)
	eventFor(t, ns, "snap", "SnapshotReady", "Snapshot "+ns+"/snap is ready to use.")
	stacktest.Eventually(t, "claim released", support.ClaimFinalizer(kube, ns, "data", snapshotapi.ClaimFinalizer, false), running)

	if err := snaps.SnapshotV1().VolumeSnapshots(ns).Delete(ctx, "snap", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	stacktest.Eventually(t, "snapshot and content gone", support.SnapshotAndContentGone(snaps, ns, "snap", name), running)
	stacktest.Eventually(t, "backend snapshot deleted", func() string {
		if backendHas(ctx, handle) {
			return "the driver still lists " + handle
		}
		return ""
	}, running)
}

// backendHas says a driver lists the snapshot handle.
func backendHas(ctx context.Context, handle string) bool {
	st, err := stack.ReadInvariants(ctx)
	if err != nil {
		return false
	}
	for _, b := range st.Backends {
		for _, s := range b.Snapshots {
			if s.ID == handle {
				return true
			}
		}
	}
	return false
}
