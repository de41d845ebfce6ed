package hostpath

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
)

func TestNewChecksConfig(t *testing.T) {
	good := Config{Endpoint: "unix:///run/csi.sock", NodeID: "node-1", DataDir: "/var/lib/hp", Capacity: 1}
	for _, tc := range []struct {
		name   string
		modify func(*Config)
		want   string
	}{
		{"no endpoint", func(c *Config) { c.Endpoint = "" }, "endpoint is required"},
		{"tcp endpoint", func(c *Config) { c.Endpoint = "tcp://127.0.0.1:10000" }, "only unix sockets"},
		{"bare path", func(c *Config) { c.Endpoint = "/run/csi.sock" }, "only unix sockets"},
		{"relative socket", func(c *Config) { c.Endpoint = "unix://csi.sock" }, "must be absolute"},
		{"long socket", func(c *Config) { c.Endpoint = "unix:///" + strings.Repeat("s", 120) }, "longer than"},
		{"no node", func(c *Config) { c.NodeID = "" }, "node ID is required"},
		{"node not a label value", func(c *Config) { c.NodeID = "node/1" }, "label value"},
		{"no data dir", func(c *Config) { c.DataDir = "" }, "data dir is required"},
		{"no capacity", func(c *Config) { c.Capacity = 0 }, "capacity must be positive"},
		{"negative limit", func(c *Config) { c.MaxVolumesPerNode = -1 }, "max volumes per node"},
	} {
		cfg := good
		cfg.Mounter = NewFakeMounter()
		tc.modify(&cfg)
		_, err := New(cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: New = %v, want an error containing %q", tc.name, err, tc.want)
		}
	}
	cfg := good
	cfg.Mounter = NewFakeMounter()
	if _, err := New(cfg); err != nil {
		t.Errorf("New(%+v) = %v", cfg, err)
	}
}

func TestCreateVolumeIsIdempotentByName(t *testing.T) {
	ctx := context.Background()
	r := startDriver(t, testConfig(shortTempDir(t), NewFakeMounter()))
	first := must[*csi.CreateVolumeResponse](t)(r.controller.CreateVolume(ctx, createReq("pvc-1"))).Volume
	again := must[*csi.CreateVolumeResponse](t)(r.controller.CreateVolume(ctx, createReq("pvc-1"))).Volume
	if first.VolumeId != again.VolumeId || again.CapacityBytes != 1<<30 {
		t.Fatalf("repeated CreateVolume gave %v, then %v", first, again)
	}

	bigger := createReq("pvc-1")
	bigger.CapacityRange = &csi.CapacityRange{RequiredBytes: 2 << 30}
	_, err := r.controller.CreateVolume(ctx, bigger)
	wantCode(t, err, codes.AlreadyExists)

	block := createReq("pvc-1")
	block.VolumeCapabilities = []*csi.VolumeCapability{blockCap()}
	_, err = r.controller.CreateVolume(ctx, block)
	wantCode(t, err, codes.AlreadyExists)

	fromVolume := createReq("pvc-1")
	fromVolume.VolumeContentSource = (contentSource{VolumeID: first.VolumeId}).csi()
	_, err = r.controller.CreateVolume(ctx, fromVolume)
	wantCode(t, err, codes.AlreadyExists)
}

func TestCapacityIsAccounted(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(shortTempDir(t), NewFakeMounter())
	cfg.Capacity = 3 << 30
	r := startDriver(t, cfg)
	free := func() int64 {
		return must[*csi.GetCapacityResponse](t)(r.controller.GetCapacity(ctx, &csi.GetCapacityRequest{})).AvailableCapacity
	}

	req := createReq("two")
	req.CapacityRange.RequiredBytes = 2 << 30
	vol := must[*csi.CreateVolumeResponse](t)(r.controller.CreateVolume(ctx, req)).Volume
	if got := free(); got != 1<<30 {
		t.Errorf("free after a 2 GiB volume = %d, want 1 GiB", got)
	}
	req.Name = "two-more"
	_, err := r.controller.CreateVolume(ctx, req)
	wantCode(t, err, codes.ResourceExhausted)
	_, err = r.controller.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "s", SourceVolumeId: vol.VolumeId})
	wantCode(t, err, codes.ResourceExhausted)
	_, err = r.controller.ControllerExpandVolume(ctx, &csi.ControllerExpandVolumeRequest{
		VolumeId: vol.VolumeId, CapacityRange: &csi.CapacityRange{RequiredBytes: 3<<30 + 1},
	})
	wantCode(t, err, codes.OutOfRange) // more than the whole capacity: see TestGrowingBeyondTheWholeCapacityIsOutOfRange

	must[*csi.DeleteVolumeResponse](t)(r.controller.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: vol.VolumeId}))
	if got := free(); got != 3<<30 {
		t.Errorf("free after deleting it = %d, want 3 GiB", got)
	}
}

func TestCreateVolumeHonorsTopology(t *testing.T) {
	ctx := context.Background()
	r := startDriver(t, testConfig(shortTempDir(t), NewFakeMounter()))
	topo := func(node string) []*csi.Topology {
		return []*csi.Topology{{Segments: map[string]string{TopologyKey: node}}}
	}

	elsewhere := createReq("elsewhere")
	elsewhere.AccessibilityRequirements = &csi.TopologyRequirement{Requisite: topo("node-2"), Preferred: topo("node-3")}
	_, err := r.controller.CreateVolume(ctx, elsewhere)
	wantCode(t, err, codes.ResourceExhausted)

	here := createReq("here")
	here.AccessibilityRequirements = &csi.TopologyRequirement{Requisite: append(topo("node-2"), topo(testNode)...)}
	vol := must[*csi.CreateVolumeResponse](t)(r.controller.CreateVolume(ctx, here)).Volume
	if got := vol.AccessibleTopology; len(got) != 1 || got[0].Segments[TopologyKey] != testNode {
		t.Errorf("volume topology = %v, want only %s=%s", got, TopologyKey, testNode)
	}

	capacity := must[*csi.GetCapacityResponse](t)(r.controller.GetCapacity(ctx, &csi.GetCapacityRequest{AccessibleTopology: topo("node-2")[0]}))
	if capacity.AvailableCapacity != 0 {
		t.Errorf("capacity on another node = %d, want 0", capacity.AvailableCapacity)
	}
}

func TestUnsafeNamesAreRefused(t *testing.T) {
	ctx := context.Background()
	r := startDriver(t, testConfig(shortTempDir(t), NewFakeMounter()))
	for _, name := range []string{"../escape", "a/b", "nul\x00", strings.Repeat("x", 129)} {
		_, err := r.controller.CreateVolume(ctx, createReq(name))
		wantCode(t, err, codes.InvalidArgument)
		_, err = r.controller.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: name})
		wantCode(t, err, codes.InvalidArgument)
		_, err = r.controller.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "s", SourceVolumeId: name})
		wantCode(t, err, codes.InvalidArgument)
	}
}

func TestVolumeInUseIsNotDeleted(t *testing.T) {
	ctx := context.Background()
	r := startDriver(t, testConfig(shortTempDir(t), NewFakeMounter()))
	vol := must[*csi.CreateVolumeResponse](t)(r.controller.CreateVolume(ctx, createReq("busy"))).Volume
	must[*csi.ControllerPublishVolumeResponse](t)(r.controller.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{
		VolumeId: vol.VolumeId, NodeId: testNode, VolumeCapability: mountCap(),
	}))
	_, err := r.controller.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: vol.VolumeId})
	wantCode(t, err, codes.FailedPrecondition)

	must[*csi.ControllerUnpublishVolumeResponse](t)(r.controller.ControllerUnpublishVolume(ctx, &csi.ControllerUnpublishVolumeRequest{VolumeId: vol.VolumeId}))
	must[*csi.DeleteVolumeResponse](t)(r.controller.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: vol.VolumeId}))
}

func TestAttachingOffIsUnimplemented(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(shortTempDir(t), NewFakeMounter())
	cfg.AttachRequired = false
	r := startDriver(t, cfg)
	vol := must[*csi.CreateVolumeResponse](t)(r.controller.CreateVolume(ctx, createReq("v"))).Volume
	_, err := r.controller.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{
		VolumeId: vol.VolumeId, NodeId: testNode, VolumeCapability: mountCap(),
	})
	wantCode(t, err, codes.Unimplemented)
	// Without attaching, the node stages without waiting for an attachment.
	staging := filepath.Join(shortTempDir(t), "staging")
	must[*csi.NodeStageVolumeResponse](t)(r.node.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{
		VolumeId: vol.VolumeId, StagingTargetPath: staging, VolumeCapability: mountCap(),
	}))
}

// TestCopiesKeepData checks that clones and restored snapshots hold the
// source's data as it was when copied, for both access types, and that a
// block copy stays sparse.
func TestCopiesKeepData(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(shortTempDir(t), NewFakeMounter())
	r := startDriver(t, cfg)

	src := must[*csi.CreateVolumeResponse](t)(r.controller.CreateVolume(ctx, createReq("files"))).Volume
	writeVolumeFile(t, cfg.DataDir, src.VolumeId, "f", "v1")
	if err := os.Symlink("/etc/passwd", filepath.Join(cfg.DataDir, "volumes", src.VolumeId, "link")); err != nil {
		t.Fatal(err)
	}
	snap := must[*csi.CreateSnapshotResponse](t)(r.controller.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "files-snap", SourceVolumeId: src.VolumeId})).Snapshot
	writeVolumeFile(t, cfg.DataDir, src.VolumeId, "f", "v2")

	restoreReq := createReq("files-restored")
	restoreReq.VolumeContentSource = (contentSource{SnapshotID: snap.SnapshotId}).csi()
	restored := must[*csi.CreateVolumeResponse](t)(r.controller.CreateVolume(ctx, restoreReq)).Volume
	if got := readVolumeFile(t, cfg.DataDir, restored.VolumeId, "f"); got != "v1" {
		t.Errorf("restored file = %q, want the snapshot's v1", got)
	}
	if link, err := os.Readlink(filepath.Join(cfg.DataDir, "volumes", restored.VolumeId, "link")); err != nil || link != "/etc/passwd" {
		t.Errorf("restored symlink = %q, %v; want it copied as a link", link, err)
	}
	cloneReq := createReq("files-clone")
	cloneReq.VolumeContentSource = (contentSource{VolumeID: src.VolumeId}).csi()
	clone := must[*csi.CreateVolumeResponse](t)(r.controller.CreateVolume(ctx, cloneReq)).Volume
	if got := readVolumeFile(t, cfg.DataDir, clone.VolumeId, "f"); got != "v2" {
		t.Errorf("cloned file = %q, want v2", got)
	}

	blockCopyKeepsData(t, r, cfg.DataDir)
}

func blockCopyKeepsData(t *testing.T, r *runningDriver, dataDir string) {
	t.Helper()
	ctx := context.Background()
	req := createReq("disk")
	req.VolumeCapabilities = []*csi.VolumeCapability{blockCap()}
	src := must[*csi.CreateVolumeResponse](t)(r.controller.CreateVolume(ctx, req)).Volume
	srcFile := filepath.Join(dataDir, "volumes", src.VolumeId+blockSuffix)
	f, err := os.OpenFile(srcFile, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("superblock"), 512<<20); err != nil {
		t.Fatal(err)
	}
	f.Close()

	req.Name = "disk-clone"
	req.CapacityRange.RequiredBytes = 2 << 30
	req.VolumeContentSource = (contentSource{VolumeID: src.VolumeId}).csi()
	clone := must[*csi.CreateVolumeResponse](t)(r.controller.CreateVolume(ctx, req)).Volume
	cloneFile := filepath.Join(dataDir, "volumes", clone.VolumeId+blockSuffix)
	f, err = os.Open(cloneFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	data := make([]byte, 10)
	if _, err := f.ReadAt(data, 512<<20); err != nil || string(data) != "superblock" {
		t.Fatalf("clone has %q at 512 MiB (%v), want the source's data", data, err)
	}
	fi, err := f.Stat()
	if err != nil || fi.Size() != 2<<30 {
		t.Fatalf("clone: %v, %v; want 2 GiB", fi, err)
	}
	if allocated := fi.Sys().(*syscall.Stat_t).Blocks * 512; allocated > 16<<20 {
		t.Errorf("clone allocates %d bytes for 10 bytes of data; it should stay sparse", allocated)
	}
}

func TestExpandVolume(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(shortTempDir(t), NewFakeMounter())
	r := startDriver(t, cfg)
	req := createReq("grow")
	req.VolumeCapabilities = []*csi.VolumeCapability{blockCap()}
	vol := must[*csi.CreateVolumeResponse](t)(r.controller.CreateVolume(ctx, req)).Volume

	resp := must[*csi.ControllerExpandVolumeResponse](t)(r.controller.ControllerExpandVolume(ctx, &csi.ControllerExpandVolumeRequest{
		VolumeId: vol.VolumeId, CapacityRange: &csi.CapacityRange{RequiredBytes: 3 << 30},
	}))
	if resp.CapacityBytes != 3<<30 || !resp.NodeExpansionRequired {
		t.Errorf("expand = %v, want 3 GiB and node expansion", resp)
	}
	fi, err := os.Stat(filepath.Join(cfg.DataDir, "volumes", vol.VolumeId+blockSuffix))
	if err != nil || fi.Size() != 3<<30 {
		t.Errorf("backing file after expansion: %v, %v; want 3 GiB", fi, err)
	}
	// Shrinking is a no-op that reports the real size, unless the limit forbids it.
	resp = must[*csi.ControllerExpandVolumeResponse](t)(r.controller.ControllerExpandVolume(ctx, &csi.ControllerExpandVolumeRequest{
		VolumeId: vol.VolumeId, CapacityRange: &csi.CapacityRange{RequiredBytes: 1 << 30},
	}))
	if resp.CapacityBytes != 3<<30 {
		t.Errorf("expand to less = %d bytes, want the current 3 GiB", resp.CapacityBytes)
	}
	_, err = r.controller.ControllerExpandVolume(ctx, &csi.ControllerExpandVolumeRequest{
		VolumeId: vol.VolumeId, CapacityRange: &csi.CapacityRange{RequiredBytes: 1 << 30, LimitBytes: 1 << 30},
	})
	wantCode(t, err, codes.OutOfRange)
}

func TestListVolumesPages(t *testing.T) {
	ctx := context.Background()
	r := startDriver(t, testConfig(shortTempDir(t), NewFakeMounter()))
	var want []string
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		want = append(want, must[*csi.CreateVolumeResponse](t)(r.controller.CreateVolume(ctx, createReq(name))).Volume.VolumeId)
	}
	var got []string
	token := ""
	for range len(want) {
		resp := must[*csi.ListVolumesResponse](t)(r.controller.ListVolumes(ctx, &csi.ListVolumesRequest{MaxEntries: 2, StartingToken: token}))
		for _, e := range resp.Entries {
			got = append(got, e.Volume.VolumeId)
		}
		if token = resp.NextToken; token == "" {
			break
		}
	}
	if !sameElements(got, want) || len(got) != len(want) {
		t.Fatalf("pages listed %v, want each of %v once", got, want)
	}
	_, err := r.controller.ListVolumes(ctx, &csi.ListVolumesRequest{StartingToken: "invalid-token"})
	wantCode(t, err, codes.Aborted)
}
