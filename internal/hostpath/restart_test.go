package hostpath

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
)

// TestRestartKeepsEverything stops a driver with volumes, a snapshot and a
// published volume, starts another on the same data dir and mounter (the
// kernel keeps mounts across a driver restart), and checks that everything
// is still there and usable.
func TestRestartKeepsEverything(t *testing.T) {
	ctx := context.Background()
	dir := shortTempDir(t)
	mounter := NewFakeMounter()
	cfg := testConfig(dir, mounter)
	staging, target := filepath.Join(dir, "staging"), filepath.Join(dir, "target")

	first := startDriver(t, cfg)
	a := must[*csi.CreateVolumeResponse](t)(first.controller.CreateVolume(ctx, createReq("a"))).Volume
	b := must[*csi.CreateVolumeResponse](t)(first.controller.CreateVolume(ctx, createReq("b"))).Volume
	writeVolumeFile(t, cfg.DataDir, a.VolumeId, "hello", "from a")
	snap := must[*csi.CreateSnapshotResponse](t)(first.controller.CreateSnapshot(ctx,
		&csi.CreateSnapshotRequest{Name: "snap-a", SourceVolumeId: a.VolumeId})).Snapshot
	stageAndPublish(t, first, a.VolumeId, staging, target)
	first.stop(t)
	if _, err := os.Stat(filepath.Join(dir, "csi.sock")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the socket is still there after Run returned: %v", err)
	}

	second := startDriver(t, cfg)
	vols := must[*csi.ListVolumesResponse](t)(second.controller.ListVolumes(ctx, &csi.ListVolumesRequest{}))
	var ids []string
	for _, e := range vols.Entries {
		ids = append(ids, e.Volume.VolumeId)
		if e.Volume.VolumeId == a.VolumeId && !slices.Equal(e.Status.PublishedNodeIds, []string{testNode}) {
			t.Errorf("volume a is attached to %v after the restart, want [%s]", e.Status.PublishedNodeIds, testNode)
		}
	}
	if want := []string{a.VolumeId, b.VolumeId}; !sameElements(ids, want) {
		t.Fatalf("volumes after the restart: %v, want %v", ids, want)
	}
	snaps := must[*csi.ListSnapshotsResponse](t)(second.controller.ListSnapshots(ctx, &csi.ListSnapshotsRequest{}))
	if len(snaps.Entries) != 1 || snaps.Entries[0].Snapshot.SnapshotId != snap.SnapshotId {
		t.Fatalf("snapshots after the restart: %v, want just %s", snaps.Entries, snap.SnapshotId)
	}

	// Repeating a's publication is recognized; b can be published elsewhere.
	stageAndPublish(t, second, a.VolumeId, staging, target)
	if got := mounter.Mounts()[target].Source; got != staging {
		t.Errorf("target is mounted from %q, want the staging path", got)
	}
	stageAndPublish(t, second, b.VolumeId, filepath.Join(dir, "staging-b"), filepath.Join(dir, "target-b"))

	// The snapshot's data survived too.
	restoreReq := createReq("from-snap")
	restoreReq.VolumeContentSource = (contentSource{SnapshotID: snap.SnapshotId}).csi()
	restored := must[*csi.CreateVolumeResponse](t)(second.controller.CreateVolume(ctx, restoreReq)).Volume
	if got := readVolumeFile(t, cfg.DataDir, restored.VolumeId, "hello"); got != "from a" {
		t.Errorf("restored volume holds %q, want %q", got, "from a")
	}
}

// stageAndPublish attaches, stages and publishes a mount volume on node-1.
func stageAndPublish(t *testing.T, r *runningDriver, id, staging, target string) {
	t.Helper()
	ctx := context.Background()
	if err := os.MkdirAll(staging, 0o750); err != nil {
		t.Fatal(err)
	}
	if _, err := r.controller.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{
		VolumeId: id, NodeId: testNode, VolumeCapability: mountCap(),
	}); err != nil {
		t.Fatalf("ControllerPublishVolume: %v", err)
	}
	if _, err := r.node.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{
		VolumeId: id, StagingTargetPath: staging, VolumeCapability: mountCap(),
	}); err != nil {
		t.Fatalf("NodeStageVolume: %v", err)
	}
	if _, err := r.node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{
		VolumeId: id, StagingTargetPath: staging, TargetPath: target, VolumeCapability: mountCap(),
	}); err != nil {
		t.Fatalf("NodePublishVolume: %v", err)
	}
}

func writeVolumeFile(t *testing.T, dataDir, id, name, content string) {
	t.Helper()
	path := filepath.Join(dataDir, "volumes", id, name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readVolumeFile(t *testing.T, dataDir, id, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dataDir, "volumes", id, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func sameElements(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}

// TestDataLeftByACrashIsSetAsideNotDeleted plays a driver that died after
// writing a volume's data but before recording it, on its very first
// creation: the next driver starts, moves the data under unrecorded/
// instead of deleting it, and creating the volume again starts empty.
func TestDataLeftByACrashIsSetAsideNotDeleted(t *testing.T) {
	dir := shortTempDir(t)
	cfg := testConfig(dir, NewFakeMounter())
	startDriver(t, cfg).stop(t) // a new data dir gets its state file at once
	leftover := filepath.Join(cfg.DataDir, "volumes", volumeIDFor("crashed"))
	if err := os.MkdirAll(leftover, 0o700); err != nil {
		t.Fatal(err)
	}
	writeVolumeFile(t, cfg.DataDir, volumeIDFor("crashed"), "partial", "half a copy")
	stranger := filepath.Join(cfg.DataDir, "volumes", "not-ours")
	if err := os.WriteFile(stranger, nil, 0o600); err != nil {
		t.Fatal(err)
	}

	r := startDriver(t, cfg)
	if _, err := os.Stat(leftover); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("unrecorded volume data is still in volumes/: %v", err)
	}
	moved, _ := filepath.Glob(filepath.Join(cfg.DataDir, "unrecorded", "*", "volumes", volumeIDFor("crashed"), "partial"))
	if len(moved) != 1 {
		t.Fatalf("unrecorded data under unrecorded/: %v, want the one volume moved there", moved)
	}
	if data, err := os.ReadFile(moved[0]); err != nil || string(data) != "half a copy" {
		t.Errorf("moved data = %q, %v; want it intact", data, err)
	}
	if _, err := os.Stat(stranger); err != nil {
		t.Errorf("a file the driver never names was touched: %v", err)
	}
	vol := must[*csi.CreateVolumeResponse](t)(r.controller.CreateVolume(context.Background(), createReq("crashed"))).Volume
	if entries, _ := os.ReadDir(filepath.Join(cfg.DataDir, "volumes", vol.VolumeId)); len(entries) != 0 {
		t.Errorf("the recreated volume is not empty: %v", entries)
	}
}

func TestSecondDriverOnOneDataDirIsRefused(t *testing.T) {
	dir := shortTempDir(t)
	cfg := testConfig(dir, NewFakeMounter())
	startDriver(t, cfg)

	cfg.Endpoint = "unix://" + filepath.Join(dir, "other.sock")
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	err = d.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "in use by another driver") {
		t.Fatalf("Run on a data dir in use: %v, want an error saying so", err)
	}
}

func TestLiveSocketIsNotStolen(t *testing.T) {
	dir := shortTempDir(t)
	cfg := testConfig(dir, NewFakeMounter())
	startDriver(t, cfg)

	other := testConfig(dir, NewFakeMounter())
	other.DataDir = filepath.Join(dir, "other-data")
	d, err := New(other)
	if err != nil {
		t.Fatal(err)
	}
	err = d.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "another process is serving it") {
		t.Fatalf("Run on a live socket: %v, want an error saying so", err)
	}
}

func TestDamagedStateFileIsAnError(t *testing.T) {
	dir := shortTempDir(t)
	cfg := testConfig(dir, NewFakeMounter())
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cfg.DataDir, "state.json"), []byte(`{"volumes": {`), 0o600); err != nil {
		t.Fatal(err)
	}
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	err = d.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "damaged") {
		t.Fatalf("Run with a damaged state file: %v, want an error saying so", err)
	}
	if _, err := os.Stat(filepath.Join(cfg.DataDir, "state.json")); err != nil {
		t.Errorf("the damaged state file was not left in place: %v", err)
	}
}

func TestDataDirOfAnotherNodeIsRefused(t *testing.T) {
	dir := shortTempDir(t)
	cfg := testConfig(dir, NewFakeMounter())
	r := startDriver(t, cfg)
	must[*csi.CreateVolumeResponse](t)(r.controller.CreateVolume(context.Background(), createReq("v")))
	r.stop(t)

	cfg.NodeID = "node-2"
	d, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	err = d.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "volumes cannot move between nodes") {
		t.Fatalf("Run on another node's data dir: %v, want an error saying so", err)
	}
}

// TestRebootRedoesMounts plays a node reboot: the state still records the
// staging and the publication, but the kernel (a fresh FakeMounter) has
// forgotten them. The kubelet stages and publishes again, and the mounts
// must come back.
func TestRebootRedoesMounts(t *testing.T) {
	dir := shortTempDir(t)
	cfg := testConfig(dir, NewFakeMounter())
	staging, target := filepath.Join(dir, "staging"), filepath.Join(dir, "target")
	r := startDriver(t, cfg)
	vol := must[*csi.CreateVolumeResponse](t)(r.controller.CreateVolume(context.Background(), createReq("v"))).Volume
	stageAndPublish(t, r, vol.VolumeId, staging, target)
	r.stop(t)

	rebooted := NewFakeMounter()
	cfg.Mounter = rebooted
	stageAndPublish(t, startDriver(t, cfg), vol.VolumeId, staging, target)
	mounts := rebooted.Mounts()
	if mounts[staging].Source != filepath.Join(cfg.DataDir, "volumes", vol.VolumeId) || mounts[target].Source != staging {
		t.Fatalf("mounts after the reboot: %v, want the staging and the target mounted again", mounts)
	}
}
