package hostpath

import (
	"context"
	"slices"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
)

// makeSourceVolumes creates mount volumes named names, writes "v1" into file f of
// each, and returns their IDs.
func makeSourceVolumes(t *testing.T, r *runningDriver, names ...string) []string {
	t.Helper()
	var ids []string
	for _, name := range names {
		vol := must[*csi.CreateVolumeResponse](t)(r.controller.CreateVolume(context.Background(), createReq(name))).Volume
		writeVolumeFile(t, r.cfg.DataDir, vol.VolumeId, "f", "v1 of "+name)
		ids = append(ids, vol.VolumeId)
	}
	return ids
}

func memberIDs(g *csi.VolumeGroupSnapshot) []string {
	var ids []string
	for _, s := range g.GetSnapshots() {
		ids = append(ids, s.GetSnapshotId())
	}
	return ids
}

// The whole life of a group snapshot, on both flavours: created once by
// name, its members ordinary snapshots that name their group, restorable,
// not deletable alone, and deleted only with the group and its exact
// members.
func TestGroupSnapshotLifecycle(t *testing.T) {
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
			caps := must[*csi.GroupControllerGetCapabilitiesResponse](t)(r.group.GroupControllerGetCapabilities(ctx, &csi.GroupControllerGetCapabilitiesRequest{}))
			if len(caps.Capabilities) != 1 || caps.Capabilities[0].GetRpc().GetType() != csi.GroupControllerServiceCapability_RPC_CREATE_DELETE_GET_VOLUME_GROUP_SNAPSHOT {
				t.Errorf("group capabilities = %v", caps.Capabilities)
			}
			vols := makeSourceVolumes(t, r, "db", "log", "other")
			req := &csi.CreateVolumeGroupSnapshotRequest{Name: "g1", SourceVolumeIds: []string{vols[1], vols[0]}}
			g := must[*csi.CreateVolumeGroupSnapshotResponse](t)(r.group.CreateVolumeGroupSnapshot(ctx, req)).GroupSnapshot
			if len(g.Snapshots) != 2 || !g.ReadyToUse || g.GroupSnapshotId == "" || g.CreationTime == nil {
				t.Fatalf("group = %v, want two ready members", g)
			}
			for _, s := range g.Snapshots {
				if s.GroupSnapshotId != g.GroupSnapshotId || !s.ReadyToUse || !slices.Contains(vols[:2], s.SourceVolumeId) {
					t.Errorf("member %v does not name its group %s", s, g.GroupSnapshotId)
				}
			}
			again := must[*csi.CreateVolumeGroupSnapshotResponse](t)(r.group.CreateVolumeGroupSnapshot(ctx, req)).GroupSnapshot
			if again.GroupSnapshotId != g.GroupSnapshotId || !slices.Equal(memberIDs(again), memberIDs(g)) {
				t.Errorf("repeated creation = %v, want the same group %v", again, g)
			}
			_, err := r.group.CreateVolumeGroupSnapshot(ctx, &csi.CreateVolumeGroupSnapshotRequest{Name: "g1", SourceVolumeIds: vols})
			wantCode(t, err, codes.AlreadyExists)

			for _, bad := range [][]string{nil, {vols[0], vols[0]}, {"../x"}} {
				_, err := r.group.CreateVolumeGroupSnapshot(ctx, &csi.CreateVolumeGroupSnapshotRequest{Name: "bad", SourceVolumeIds: bad})
				wantCode(t, err, codes.InvalidArgument)
			}
			_, err = r.group.CreateVolumeGroupSnapshot(ctx, &csi.CreateVolumeGroupSnapshotRequest{Name: "missing", SourceVolumeIds: []string{vols[2], "vol-nothere"}})
			wantCode(t, err, codes.NotFound)

			list := must[*csi.ListSnapshotsResponse](t)(r.controller.ListSnapshots(ctx, &csi.ListSnapshotsRequest{}))
			if len(list.Entries) != 2 {
				t.Fatalf("ListSnapshots = %v, want the two members only", list.Entries)
			}
			for _, e := range list.Entries {
				if e.Snapshot.GroupSnapshotId != g.GroupSnapshotId {
					t.Errorf("listed member %v does not name its group", e.Snapshot)
				}
			}
			member := g.Snapshots[0]
			got := must[*csi.GetSnapshotResponse](t)(r.controller.GetSnapshot(ctx, &csi.GetSnapshotRequest{SnapshotId: member.SnapshotId})).Snapshot
			if got.GroupSnapshotId != g.GroupSnapshotId || got.SourceVolumeId != member.SourceVolumeId {
				t.Errorf("GetSnapshot = %v, want member %v", got, member)
			}
			_, err = r.controller.DeleteSnapshot(ctx, &csi.DeleteSnapshotRequest{SnapshotId: member.SnapshotId})
			wantCode(t, err, codes.InvalidArgument)

			restore := createReq("restored")
			restore.VolumeContentSource = (contentSource{SnapshotID: member.SnapshotId}).csi()
			restored := must[*csi.CreateVolumeResponse](t)(r.controller.CreateVolume(ctx, restore)).Volume
			src := "db"
			if member.SourceVolumeId == vols[1] {
				src = "log"
			}
			if data := readVolumeFile(t, cfg.DataDir, restored.VolumeId, "f"); data != "v1 of "+src {
				t.Errorf("restored member holds %q, want %q", data, "v1 of "+src)
			}

			fetched := must[*csi.GetVolumeGroupSnapshotResponse](t)(r.group.GetVolumeGroupSnapshot(ctx, &csi.GetVolumeGroupSnapshotRequest{
				GroupSnapshotId: g.GroupSnapshotId, SnapshotIds: memberIDs(g)})).GroupSnapshot
			if !slices.Equal(memberIDs(fetched), memberIDs(g)) || !fetched.CreationTime.AsTime().Equal(g.CreationTime.AsTime()) {
				t.Errorf("GetVolumeGroupSnapshot = %v, want %v", fetched, g)
			}
			_, err = r.group.GetVolumeGroupSnapshot(ctx, &csi.GetVolumeGroupSnapshotRequest{GroupSnapshotId: g.GroupSnapshotId, SnapshotIds: []string{member.SnapshotId}})
			wantCode(t, err, codes.InvalidArgument)

			for _, wrong := range [][]string{nil, {member.SnapshotId}, append(memberIDs(g), snapshotIDFor("x"))} {
				_, err = r.group.DeleteVolumeGroupSnapshot(ctx, &csi.DeleteVolumeGroupSnapshotRequest{GroupSnapshotId: g.GroupSnapshotId, SnapshotIds: wrong})
				wantCode(t, err, codes.InvalidArgument)
			}
			if n := len(must[*csi.ListSnapshotsResponse](t)(r.controller.ListSnapshots(ctx, &csi.ListSnapshotsRequest{})).Entries); n != 2 {
				t.Fatalf("refused deletions left %d snapshots, want the 2 members", n)
			}
			del := &csi.DeleteVolumeGroupSnapshotRequest{GroupSnapshotId: g.GroupSnapshotId, SnapshotIds: memberIDs(g)}
			must[*csi.DeleteVolumeGroupSnapshotResponse](t)(r.group.DeleteVolumeGroupSnapshot(ctx, del))
			must[*csi.DeleteVolumeGroupSnapshotResponse](t)(r.group.DeleteVolumeGroupSnapshot(ctx, del))
			if list := must[*csi.ListSnapshotsResponse](t)(r.controller.ListSnapshots(ctx, &csi.ListSnapshotsRequest{})); len(list.Entries) != 0 {
				t.Errorf("after deleting the group: %v, want no snapshot", list.Entries)
			}
			_, err = r.group.GetVolumeGroupSnapshot(ctx, &csi.GetVolumeGroupSnapshotRequest{GroupSnapshotId: g.GroupSnapshotId})
			wantCode(t, err, codes.NotFound)
			_, err = r.controller.GetSnapshot(ctx, &csi.GetSnapshotRequest{SnapshotId: member.SnapshotId})
			wantCode(t, err, codes.NotFound)
			if entries, err := (layout{root: cfg.DataDir}).dataEntries(); err != nil || len(entries) != 4 {
				t.Errorf("data on disk after the deletions: %v, %v; want the 4 volumes only", entries, err)
			}
		})
	}
}

// A group is taken whole or not at all: one that does not fit in the
// capacity fails with ResourceExhausted and leaves no member, on disk or
// recorded.
func TestGroupSnapshotBeyondCapacityLeavesNothing(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(shortTempDir(t), NewFakeMounter())
	cfg.Capacity = 3 << 30
	r := startDriver(t, cfg)
	vols := makeSourceVolumes(t, r, "a", "b")
	_, err := r.group.CreateVolumeGroupSnapshot(ctx, &csi.CreateVolumeGroupSnapshotRequest{Name: "g", SourceVolumeIds: vols})
	wantCode(t, err, codes.ResourceExhausted)
	if list := must[*csi.ListSnapshotsResponse](t)(r.controller.ListSnapshots(ctx, &csi.ListSnapshotsRequest{})); len(list.Entries) != 0 {
		t.Errorf("ListSnapshots = %v, want nothing", list.Entries)
	}
	if entries, err := (layout{root: cfg.DataDir}).dataEntries(); err != nil || len(entries) != 2 {
		t.Errorf("data on disk: %v, %v; want the 2 volumes only", entries, err)
	}
	// One member fits.
	g := must[*csi.CreateVolumeGroupSnapshotResponse](t)(r.group.CreateVolumeGroupSnapshot(ctx, &csi.CreateVolumeGroupSnapshotRequest{Name: "g1", SourceVolumeIds: vols[:1]})).GroupSnapshot
	if len(g.Snapshots) != 1 {
		t.Errorf("group of one = %v", g)
	}
}
