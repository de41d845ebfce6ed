package hostpath

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
)

// A driver killed while it takes a group snapshot, after copying some
// members and before recording the group, has recorded nothing of it. The
// test keeps the disk as it is at that instant (every write of the driver
// is fsynced, so that image is what a crash leaves) and starts a driver on
// it: no group and no member is recorded, the copied member data is set
// aside under unrecorded/ and not deleted, and the group can be taken anew.
func TestCrashDuringGroupSnapshotRecordsNoHalfGroup(t *testing.T) {
	ctx := context.Background()
	dir := shortTempDir(t)
	cfg := testConfig(dir, NewFakeMounter())
	pause := pauseGroups(&cfg)
	image := filepath.Join(dir, "crashed")
	pause.onPause = func() {
		if err := copyTree(ctx, cfg.DataDir, image); err != nil {
			t.Errorf("image of the data dir: %v", err)
		}
	}
	pause.release()
	r := startDriver(t, cfg)
	vols := makeSourceVolumes(t, r, "a", "b", "c")
	req := &csi.CreateVolumeGroupSnapshotRequest{Name: "g", SourceVolumeIds: vols}
	taken := must[*csi.CreateVolumeGroupSnapshotResponse](t)(r.group.CreateVolumeGroupSnapshot(ctx, req)).GroupSnapshot
	r.stop(t)

	crashed := cfg
	crashed.DataDir, crashed.memberCopied = image, nil
	crashed.Endpoint = "unix://" + filepath.Join(dir, "crashed.sock")
	r = startDriver(t, crashed)
	if list := must[*csi.ListSnapshotsResponse](t)(r.controller.ListSnapshots(ctx, &csi.ListSnapshotsRequest{})); len(list.Entries) != 0 {
		t.Errorf("after the crash, ListSnapshots = %v; want no member of the half-taken group", list.Entries)
	}
	_, err := r.group.GetVolumeGroupSnapshot(ctx, &csi.GetVolumeGroupSnapshotRequest{GroupSnapshotId: taken.GroupSnapshotId})
	wantCode(t, err, codes.NotFound)
	st, _, err := readState(filepath.Join(image, "state.json"))
	if err != nil || st.GroupSnapshots.Len() != 0 || st.Snapshots.Len() != 0 {
		t.Fatalf("state after the crash: %v, %v; want no group and no snapshot", st, err)
	}
	aside, err := filepath.Glob(filepath.Join(image, "unrecorded", "*", "snapshots", snapshotIDPrefix+"*"))
	if err != nil || len(aside) != 1 {
		t.Errorf("member data set aside: %v, %v; want the one member copied before the crash", aside, err)
	}
	again := must[*csi.CreateVolumeGroupSnapshotResponse](t)(r.group.CreateVolumeGroupSnapshot(ctx, req)).GroupSnapshot
	if len(again.Snapshots) != 3 {
		t.Fatalf("group taken after the crash = %v, want 3 members", again)
	}
	for _, s := range again.Snapshots {
		if _, err := os.Stat(filepath.Join(image, "snapshots", s.SnapshotId)); err != nil {
			t.Errorf("member %s: %v", s.SnapshotId, err)
		}
	}
}

// A driver killed while deleting a group, after removing some members'
// data and before recording the deletion, still records the whole group;
// the CO's retried deletion finishes it and leaves nothing.
func TestCrashDuringGroupDeletionIsFinishedByTheRetry(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(shortTempDir(t), NewFakeMounter())
	r := startDriver(t, cfg)
	vols := makeSourceVolumes(t, r, "a", "b")
	g := must[*csi.CreateVolumeGroupSnapshotResponse](t)(r.group.CreateVolumeGroupSnapshot(ctx,
		&csi.CreateVolumeGroupSnapshotRequest{Name: "g", SourceVolumeIds: vols})).GroupSnapshot
	r.stop(t)
	if err := removeData(filepath.Join(cfg.DataDir, "snapshots", g.Snapshots[0].SnapshotId)); err != nil {
		t.Fatal(err)
	}

	r = startDriver(t, cfg)
	got := must[*csi.GetVolumeGroupSnapshotResponse](t)(r.group.GetVolumeGroupSnapshot(ctx,
		&csi.GetVolumeGroupSnapshotRequest{GroupSnapshotId: g.GroupSnapshotId})).GroupSnapshot
	if len(got.Snapshots) != 2 {
		t.Fatalf("group after the crash = %v, want it recorded whole", got)
	}
	must[*csi.DeleteVolumeGroupSnapshotResponse](t)(r.group.DeleteVolumeGroupSnapshot(ctx,
		&csi.DeleteVolumeGroupSnapshotRequest{GroupSnapshotId: g.GroupSnapshotId, SnapshotIds: memberIDs(g)}))
	if list := must[*csi.ListSnapshotsResponse](t)(r.controller.ListSnapshots(ctx, &csi.ListSnapshotsRequest{})); len(list.Entries) != 0 {
		t.Errorf("after the retried deletion: %v, want no snapshot", list.Entries)
	}
	if entries, err := (layout{root: cfg.DataDir}).dataEntries(); err != nil || len(entries) != 2 {
		t.Errorf("data on disk: %v, %v; want the 2 volumes only", entries, err)
	}
}
