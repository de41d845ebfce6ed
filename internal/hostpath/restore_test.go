package hostpath

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
)

// A block volume's snapshot is a sparse copy of its file, independent of
// the volume; restoring it into a larger volume gives a volume of the
// requested size holding the snapshot's data, its file grown (and still
// sparse). GetSnapshot finds it, and NotFound once it is deleted.
func TestBlockSnapshotRestoresIntoALargerVolume(t *testing.T) {
	for _, network := range []bool{false, true} {
		name := "node-local"
		if network {
			name = "network"
		}
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			dir := shortTempDir(t)
			cfg := testConfig(dir, NewFakeMounter())
			if network {
				cfg = testNetworkConfig(dir, NewFakeMounter(), testNode)
			}
			r := startDriver(t, cfg)
			req := createReq("disk")
			req.VolumeCapabilities = []*csi.VolumeCapability{blockCap()}
			src := must[*csi.CreateVolumeResponse](t)(r.controller.CreateVolume(ctx, req)).Volume
			srcFile := filepath.Join(cfg.DataDir, "volumes", src.VolumeId+blockSuffix)
			writeAt(t, srcFile, 700<<20, "before")
			snap := must[*csi.CreateSnapshotResponse](t)(r.controller.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "disk-snap", SourceVolumeId: src.VolumeId})).Snapshot
			if snap.SizeBytes != 1<<30 || !snap.ReadyToUse || snap.GroupSnapshotId != "" {
				t.Errorf("snapshot = %v, want a ready 1 GiB snapshot of no group", snap)
			}
			writeAt(t, srcFile, 700<<20, "after!")

			got := must[*csi.GetSnapshotResponse](t)(r.controller.GetSnapshot(ctx, &csi.GetSnapshotRequest{SnapshotId: snap.SnapshotId})).Snapshot
			if got.SnapshotId != snap.SnapshotId || got.SourceVolumeId != src.VolumeId || got.SizeBytes != snap.SizeBytes {
				t.Errorf("GetSnapshot = %v, want %v", got, snap)
			}

			restore := createReq("disk-restored")
			restore.VolumeCapabilities = []*csi.VolumeCapability{blockCap()}
			restore.CapacityRange.RequiredBytes = 3 << 30
			restore.VolumeContentSource = (contentSource{SnapshotID: snap.SnapshotId}).csi()
			restored := must[*csi.CreateVolumeResponse](t)(r.controller.CreateVolume(ctx, restore)).Volume
			if restored.CapacityBytes != 3<<30 || restored.ContentSource.GetSnapshot().GetSnapshotId() != snap.SnapshotId {
				t.Errorf("restored volume = %v, want 3 GiB from %s", restored, snap.SnapshotId)
			}
			file := filepath.Join(cfg.DataDir, "volumes", restored.VolumeId+blockSuffix)
			if data := readAt(t, file, 700<<20, 6); data != "before" {
				t.Errorf("restored volume holds %q at 700 MiB, want the snapshot's %q", data, "before")
			}
			fi, err := os.Stat(file)
			if err != nil || fi.Size() != 3<<30 {
				t.Errorf("restored file: %v, %v; want it grown to 3 GiB", fi, err)
			}

			// A snapshot is restored as the access type it was taken of.
			wrong := createReq("disk-as-dir")
			wrong.VolumeContentSource = restore.VolumeContentSource
			_, err = r.controller.CreateVolume(ctx, wrong)
			wantCode(t, err, codes.InvalidArgument)
			// Smaller than the snapshot: the limit forbids growing to it.
			small := createReq("disk-small")
			small.VolumeCapabilities = []*csi.VolumeCapability{blockCap()}
			small.CapacityRange = &csi.CapacityRange{RequiredBytes: 1 << 20, LimitBytes: 1 << 20}
			small.VolumeContentSource = restore.VolumeContentSource
			_, err = r.controller.CreateVolume(ctx, small)
			wantCode(t, err, codes.OutOfRange)

			must[*csi.DeleteVolumeResponse](t)(r.controller.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: src.VolumeId}))
			again := restore
			again.Name = "disk-restored-2"
			restored2 := must[*csi.CreateVolumeResponse](t)(r.controller.CreateVolume(ctx, again)).Volume
			if data := readAt(t, filepath.Join(cfg.DataDir, "volumes", restored2.VolumeId+blockSuffix), 700<<20, 6); data != "before" {
				t.Errorf("restored after the source's deletion: %q, want %q", data, "before")
			}
			must[*csi.DeleteSnapshotResponse](t)(r.controller.DeleteSnapshot(ctx, &csi.DeleteSnapshotRequest{SnapshotId: snap.SnapshotId}))
			_, err = r.controller.GetSnapshot(ctx, &csi.GetSnapshotRequest{SnapshotId: snap.SnapshotId})
			wantCode(t, err, codes.NotFound)
			_, err = r.controller.GetSnapshot(ctx, &csi.GetSnapshotRequest{})
			wantCode(t, err, codes.InvalidArgument)
		})
	}
}

// A mount volume restored from a snapshot into a larger volume has the
// requested size and the snapshot's files.
func TestMountSnapshotRestoresIntoALargerVolume(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(shortTempDir(t), NewFakeMounter())
	r := startDriver(t, cfg)
	src := must[*csi.CreateVolumeResponse](t)(r.controller.CreateVolume(ctx, createReq("files"))).Volume
	writeVolumeFile(t, cfg.DataDir, src.VolumeId, "f", "v1")
	snap := must[*csi.CreateSnapshotResponse](t)(r.controller.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "files-snap", SourceVolumeId: src.VolumeId})).Snapshot
	restore := createReq("files-big")
	restore.CapacityRange.RequiredBytes = 5 << 30
	restore.VolumeContentSource = (contentSource{SnapshotID: snap.SnapshotId}).csi()
	restored := must[*csi.CreateVolumeResponse](t)(r.controller.CreateVolume(ctx, restore)).Volume
	if restored.CapacityBytes != 5<<30 {
		t.Errorf("restored volume has %d bytes, want 5 GiB", restored.CapacityBytes)
	}
	if got := readVolumeFile(t, cfg.DataDir, restored.VolumeId, "f"); got != "v1" {
		t.Errorf("restored file = %q, want v1", got)
	}
}

func writeAt(t *testing.T, path string, off int64, data string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt([]byte(data), off); err != nil {
		t.Fatal(err)
	}
}

func readAt(t *testing.T, path string, off int64, n int) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, off); err != nil {
		t.Fatal(err)
	}
	return string(buf)
}
