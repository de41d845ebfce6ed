package hostpath

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
)

func expandTo(r *runningDriver, id string, size int64) (*csi.ControllerExpandVolumeResponse, error) {
	return r.controller.ControllerExpandVolume(context.Background(), &csi.ControllerExpandVolumeRequest{
		VolumeId: id, CapacityRange: &csi.CapacityRange{RequiredBytes: size},
	})
}

// A size the driver could hold once other volumes are gone is
// ResourceExhausted (worth retrying); a size beyond the driver's whole
// capacity can never be served, so it is OutOfRange, which the CSI
// sidecars treat as infeasible.
func TestGrowingBeyondTheWholeCapacityIsOutOfRange(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(shortTempDir(t), NewFakeMounter())
	cfg.Capacity = 3 << 30
	r := startDriver(t, cfg)
	two := createReq("two")
	two.CapacityRange.RequiredBytes = 2 << 30
	vol := must[*csi.CreateVolumeResponse](t)(r.controller.CreateVolume(ctx, two)).Volume
	half := createReq("half")
	half.CapacityRange.RequiredBytes = 1 << 29
	must[*csi.CreateVolumeResponse](t)(r.controller.CreateVolume(ctx, half))

	_, err := expandTo(r, vol.VolumeId, 3<<30) // fits 3 GiB, not the 512 MiB left
	wantCode(t, err, codes.ResourceExhausted)
	_, err = expandTo(r, vol.VolumeId, 3<<30+1)
	wantCode(t, err, codes.OutOfRange)

	huge := createReq("huge")
	huge.CapacityRange.RequiredBytes = 3<<30 + 1 // another node's driver may hold it
	_, err = r.controller.CreateVolume(ctx, huge)
	wantCode(t, err, codes.ResourceExhausted)
	huge.CapacityRange.RequiredBytes = 1 << 30 // fits 3 GiB, not the 512 MiB left
	_, err = r.controller.CreateVolume(ctx, huge)
	wantCode(t, err, codes.ResourceExhausted)

	if got := r.state(t).Volumes.Get(vol.VolumeId).CapacityBytes; got != 2<<30 {
		t.Errorf("volume has %d bytes after refused expansions, want the 2 GiB it had", got)
	}
}

// On the node-local driver a mount volume is a directory: nothing to grow
// on the node. A block volume's loop device must be refreshed (TestExpandVolume).
func TestNodeLocalMountVolumeNeedsNoNodeExpansion(t *testing.T) {
	r := startDriver(t, testConfig(shortTempDir(t), NewFakeMounter()))
	vol := must[*csi.CreateVolumeResponse](t)(r.controller.CreateVolume(context.Background(), createReq("v"))).Volume
	resp := must[*csi.ControllerExpandVolumeResponse](t)(expandTo(r, vol.VolumeId, 2<<30))
	if resp.CapacityBytes != 2<<30 || resp.NodeExpansionRequired {
		t.Errorf("expand = %v, want 2 GiB without node expansion", resp)
	}
}

func nodeTotal(t *testing.T, r *runningDriver, node, id, path string) int64 {
	t.Helper()
	stats := must[*csi.NodeGetVolumeStatsResponse](t)(r.nodes[node].NodeGetVolumeStats(context.Background(),
		&csi.NodeGetVolumeStatsRequest{VolumeId: id, VolumePath: path}))
	return stats.Usage[0].Total
}

func nodeExpand(r *runningDriver, node, id, path string) (*csi.NodeExpandVolumeResponse, error) {
	return r.nodes[node].NodeExpandVolume(context.Background(), &csi.NodeExpandVolumeRequest{
		VolumeId: id, VolumePath: path, CapacityRange: &csi.CapacityRange{RequiredBytes: 2 << 30},
	})
}

// A network volume's filesystem is grown on the node that mounts it: after
// ControllerExpandVolume, which asks for node expansion even for mount
// volumes, each node sees the old size until its NodeExpandVolume, and the
// driver keeps each node's size in its state, across restarts and
// unstaging.
func TestNetworkVolumesAreGrownOnEachNode(t *testing.T) {
	dir := shortTempDir(t)
	cfg := testNetworkConfig(dir, NewFakeMounter(), "node-1", "node-2")
	r := startDriver(t, cfg)
	id := createRWX(t, r, "v").VolumeId
	staging := func(node string) string { return filepath.Join(dir, node+"-staging") }
	for _, node := range []string{"node-1", "node-2"} {
		if err := publishTo(r, id, node, rwx()); err != nil {
			t.Fatal(err)
		}
		if err := stageOn(r, node, id, staging(node), rwx()); err != nil {
			t.Fatal(err)
		}
	}

	resp := must[*csi.ControllerExpandVolumeResponse](t)(expandTo(r, id, 2<<30))
	if resp.CapacityBytes != 2<<30 || !resp.NodeExpansionRequired {
		t.Fatalf("expand = %v, want 2 GiB and node expansion", resp)
	}
	if got := nodeTotal(t, r, "node-1", id, staging("node-1")); got != 1<<30 {
		t.Errorf("node-1 sees %d bytes before its node expansion, want the 1 GiB it staged", got)
	}
	if got := must[*csi.NodeExpandVolumeResponse](t)(nodeExpand(r, "node-1", id, staging("node-1"))); got.CapacityBytes != 2<<30 {
		t.Errorf("NodeExpandVolume on node-1 = %v, want 2 GiB", got)
	}
	if got := nodeTotal(t, r, "node-1", id, staging("node-1")); got != 2<<30 {
		t.Errorf("node-1 sees %d bytes after its node expansion, want 2 GiB", got)
	}
	if got := nodeTotal(t, r, "node-2", id, staging("node-2")); got != 1<<30 {
		t.Errorf("node-2 sees %d bytes; node-1's expansion is not node-2's, want 1 GiB", got)
	}

	// The records survive a restart, and node-2's survives unstaging and staging again.
	r.stop(t)
	r = startDriver(t, cfg)
	if _, err := r.nodes["node-2"].NodeUnstageVolume(context.Background(), &csi.NodeUnstageVolumeRequest{
		VolumeId: id, StagingTargetPath: staging("node-2")}); err != nil {
		t.Fatal(err)
	}
	if err := stageOn(r, "node-2", id, staging("node-2"), rwx()); err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{"node-1": 2 << 30, "node-2": 1 << 30}
	if got := r.state(t).Volumes.Get(id).NodeSizes; len(got) != 2 || got["node-1"] != want["node-1"] || got["node-2"] != want["node-2"] {
		t.Errorf("node sizes in the state = %v, want %v", got, want)
	}
	must[*csi.NodeExpandVolumeResponse](t)(nodeExpand(r, "node-2", id, staging("node-2")))
	if got := nodeTotal(t, r, "node-2", id, staging("node-2")); got != 2<<30 {
		t.Errorf("node-2 sees %d bytes after its node expansion, want 2 GiB", got)
	}
}

// A node that stages a network volume for the first time after it grew
// meets it at its new size.
func TestNodeStagingAGrownNetworkVolumeFirstSeesItWhole(t *testing.T) {
	dir, r := startNetwork(t)
	id := createRWX(t, r, "v").VolumeId
	must[*csi.ControllerExpandVolumeResponse](t)(expandTo(r, id, 2<<30))
	if err := publishTo(r, id, "node-2", rwx()); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "staging")
	if err := stageOn(r, "node-2", id, path, rwx()); err != nil {
		t.Fatal(err)
	}
	if got := nodeTotal(t, r, "node-2", id, path); got != 2<<30 {
		t.Errorf("node-2 sees %d bytes, want 2 GiB", got)
	}
}
