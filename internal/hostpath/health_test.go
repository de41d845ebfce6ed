package hostpath

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
)

// healthOf is one volume's (status, reason) pairs, sorted as reported.
func healthOf(h *csi.VolumeHealth) []string {
	var out []string
	for _, e := range h.GetHealthStatuses() {
		out = append(out, e.GetStatus().String()+"/"+e.GetReason())
	}
	return out
}

func TestControllerVolumeHealth(t *testing.T) {
	ctx := context.Background()
	dir := shortTempDir(t)
	r := startDriver(t, testConfig(dir, NewFakeMounter()))
	small := createReq("small")
	small.CapacityRange = &csi.CapacityRange{RequiredBytes: 16 << 10}
	vol := must[*csi.CreateVolumeResponse](t)(r.controller.CreateVolume(ctx, small)).Volume
	other := must[*csi.CreateVolumeResponse](t)(r.controller.CreateVolume(ctx, createReq("other"))).Volume
	get := func(id string) []string {
		return healthOf(must[*csi.ControllerGetVolumeHealthResponse](t)(r.controller.ControllerGetVolumeHealth(ctx,
			&csi.ControllerGetVolumeHealthRequest{VolumeId: id})).GetVolumeHealth())
	}
	list := func(maxEntries int32) map[string][]string {
		out := map[string][]string{}
		token := ""
		for {
			resp := must[*csi.ControllerListVolumeHealthResponse](t)(r.controller.ControllerListVolumeHealth(ctx,
				&csi.ControllerListVolumeHealthRequest{MaxEntries: maxEntries, StartingToken: token}))
			for _, e := range resp.Entries {
				out[e.VolumeId] = healthOf(e)
			}
			if token = resp.NextToken; token == "" {
				return out
			}
		}
	}
	if h := get(vol.VolumeId); len(h) != 0 {
		t.Errorf("health of a new volume = %v, want none", h)
	}
	if l := list(1); len(l) != 0 {
		t.Errorf("listed health = %v, want no abnormal volume", l)
	}

	writeVolumeFile(t, r.cfg.DataDir, vol.VolumeId, "big", strings.Repeat("x", 64<<10))
	if h := get(vol.VolumeId); strings.Join(h, ",") != "DEGRADED/OverCapacity" {
		t.Errorf("health of an overfull volume = %v, want DEGRADED/OverCapacity", h)
	}
	if err := os.RemoveAll(filepath.Join(r.cfg.DataDir, "volumes", other.VolumeId)); err != nil {
		t.Fatal(err)
	}
	l := list(1)
	if len(l) != 2 || strings.Join(l[other.VolumeId], ",") != "INACCESSIBLE/DataMissing" ||
		strings.Join(l[vol.VolumeId], ",") != "DEGRADED/OverCapacity" {
		t.Errorf("listed health by pages of 1 = %v, want the overfull one DEGRADED and the removed one INACCESSIBLE", l)
	}

	if err := os.Remove(filepath.Join(r.cfg.DataDir, "volumes", vol.VolumeId, "big")); err != nil {
		t.Fatal(err)
	}
	if h := get(vol.VolumeId); len(h) != 0 {
		t.Errorf("health after the file went = %v, want none", h)
	}
	_, err := r.controller.ControllerGetVolumeHealth(ctx, &csi.ControllerGetVolumeHealthRequest{VolumeId: "vol-missing"})
	wantCode(t, err, codes.NotFound)
	_, err = r.controller.ControllerListVolumeHealth(ctx, &csi.ControllerListVolumeHealthRequest{StartingToken: "bogus"})
	wantCode(t, err, codes.Aborted)
}

func TestNodeVolumeHealth(t *testing.T) {
	ctx := context.Background()
	f := newNodeFixture(t, NewFakeMounter(), mountCap())
	if err := f.stage(mountCap()); err != nil {
		t.Fatal(err)
	}
	if err := f.publish(mountCap(), false); err != nil {
		t.Fatal(err)
	}
	get := func(req *csi.NodeGetVolumeHealthRequest) []string {
		req.VolumeId = f.vol.VolumeId
		return healthOf(must[*csi.NodeGetVolumeHealthResponse](t)(f.r.node.NodeGetVolumeHealth(ctx, req)).GetVolumeHealth())
	}
	if h := get(&csi.NodeGetVolumeHealthRequest{VolumePublishPath: f.target}); len(h) != 0 {
		t.Errorf("health of a published volume = %v, want none", h)
	}
	if err := f.mounter.Unmount(f.target); err != nil {
		t.Fatal(err)
	}
	for name, req := range map[string]*csi.NodeGetVolumeHealthRequest{
		"target given": {VolumePublishPath: f.target},
		"no path":      {},
	} {
		if h := get(req); strings.Join(h, ",") != "INACCESSIBLE/NotMounted" {
			t.Errorf("%s: health of an unmounted target = %v, want INACCESSIBLE/NotMounted", name, h)
		}
	}
	if h := get(&csi.NodeGetVolumeHealthRequest{StagingTargetPath: f.staging}); len(h) != 0 {
		t.Errorf("health at the staging path, still mounted = %v, want none", h)
	}
	_, err := f.r.node.NodeGetVolumeHealth(ctx, &csi.NodeGetVolumeHealthRequest{VolumeId: f.vol.VolumeId, VolumePublishPath: "/elsewhere"})
	wantCode(t, err, codes.NotFound)
	_, err = f.r.node.NodeGetVolumeHealth(ctx, &csi.NodeGetVolumeHealthRequest{})
	wantCode(t, err, codes.InvalidArgument)

	if err := os.RemoveAll(filepath.Join(f.r.cfg.DataDir, "volumes", f.vol.VolumeId)); err != nil {
		t.Fatal(err)
	}
	if h := get(&csi.NodeGetVolumeHealthRequest{}); strings.Join(h, ",") != "INACCESSIBLE/DataMissing" {
		t.Errorf("health with the data removed = %v, want INACCESSIBLE/DataMissing", h)
	}
}

func TestNodeStorageHealth(t *testing.T) {
	ctx := context.Background()
	f := newNodeFixture(t, NewFakeMounter(), mountCap())
	resp := must[*csi.NodeGetStorageHealthResponse](t)(f.r.node.NodeGetStorageHealth(ctx, &csi.NodeGetStorageHealthRequest{}))
	if len(resp.BackendHealth) != 0 {
		t.Errorf("storage health = %v, want none", resp.BackendHealth)
	}
	volumes := filepath.Join(f.r.cfg.DataDir, "volumes")
	if err := os.Rename(volumes, volumes+".away"); err != nil {
		t.Fatal(err)
	}
	resp = must[*csi.NodeGetStorageHealthResponse](t)(f.r.node.NodeGetStorageHealth(ctx, &csi.NodeGetStorageHealthRequest{}))
	if len(resp.BackendHealth) != 1 || resp.BackendHealth[0].Status != csi.StorageHealthErrorType_STORAGE_UNREACHABLE ||
		resp.BackendHealth[0].Reason != ReasonDataDirUnreachable {
		t.Errorf("storage health without its data directory = %v, want STORAGE_UNREACHABLE", resp.BackendHealth)
	}
	if err := os.Rename(volumes+".away", volumes); err != nil {
		t.Fatal(err)
	}
}

func TestNodeGetVolumeStatsInodesAndBlock(t *testing.T) {
	f := newNodeFixture(t, NewFakeMounter(), mountCap())
	if err := f.stage(mountCap()); err != nil {
		t.Fatal(err)
	}
	if err := f.publish(mountCap(), false); err != nil {
		t.Fatal(err)
	}
	writeVolumeFile(t, f.r.cfg.DataDir, f.vol.VolumeId, "a", "a")
	writeVolumeFile(t, f.r.cfg.DataDir, f.vol.VolumeId, "b", "b")
	stats := must[*csi.NodeGetVolumeStatsResponse](t)(f.r.node.NodeGetVolumeStats(context.Background(),
		&csi.NodeGetVolumeStatsRequest{VolumeId: f.vol.VolumeId, VolumePath: f.target}))
	if len(stats.Usage) != 2 || stats.Usage[1].Unit != csi.VolumeUsage_INODES || stats.Usage[1].Used != 3 ||
		stats.Usage[1].Total <= 0 {
		t.Errorf("usage = %v, want the inodes of the directory and its two files", stats.Usage)
	}

	b := newNodeFixture(t, NewFakeMounter(), blockCap())
	if err := b.stage(blockCap()); err != nil {
		t.Fatal(err)
	}
	if err := b.publish(blockCap(), false); err != nil {
		t.Fatal(err)
	}
	stats = must[*csi.NodeGetVolumeStatsResponse](t)(b.r.node.NodeGetVolumeStats(context.Background(),
		&csi.NodeGetVolumeStatsRequest{VolumeId: b.vol.VolumeId, VolumePath: b.target}))
	if u := stats.Usage[0]; len(stats.Usage) != 1 || u.Total != 1<<30 || u.Available != u.Total-u.Used {
		t.Errorf("usage of a block volume = %v, want its size and its file's allocated bytes", stats.Usage)
	}
}
