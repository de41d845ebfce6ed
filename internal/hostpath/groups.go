package hostpath

import (
	"context"
	"slices"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// groupSnapshotIDPrefix begins every group snapshot ID, "group-" and the
// first 32 hex digits of sha256(name), as volumes and snapshots are named.
// A group ID never becomes a path.
const groupSnapshotIDPrefix = "group-"

func groupSnapshotIDFor(name string) string { return issueID(groupSnapshotIDPrefix, name) }

// memberSnapshotIDFor is the ID of the member of group name taken of
// volume: deterministic, so a retried creation finds the same members, and
// never the ID of a snapshot CreateSnapshot names, since a snapshot name
// cannot hold the '/' this one is hashed with.
func memberSnapshotIDFor(name, volumeID string) string {
	return issueID(snapshotIDPrefix, name+"/"+volumeID)
}

type groupControllerServer struct {
	csi.UnimplementedGroupControllerServer
	d *Driver
}

func (s *groupControllerServer) GroupControllerGetCapabilities(context.Context, *csi.GroupControllerGetCapabilitiesRequest) (*csi.GroupControllerGetCapabilitiesResponse, error) {
	return &csi.GroupControllerGetCapabilitiesResponse{Capabilities: []*csi.GroupControllerServiceCapability{{
		Type: &csi.GroupControllerServiceCapability_Rpc{Rpc: &csi.GroupControllerServiceCapability_RPC{
			Type: csi.GroupControllerServiceCapability_RPC_CREATE_DELETE_GET_VOLUME_GROUP_SNAPSHOT,
		}},
	}}}, nil
}

// CreateVolumeGroupSnapshot snapshots every source volume together, or
// returns the group if one of that name exists of the same volumes.
func (s *groupControllerServer) CreateVolumeGroupSnapshot(ctx context.Context, req *csi.CreateVolumeGroupSnapshotRequest) (*csi.CreateVolumeGroupSnapshotResponse, error) {
	name := req.GetName()
	if err := checkName("group snapshot name", name); err != nil {
		return nil, err
	}
	sources, err := groupSources(req.GetSourceVolumeIds())
	if err != nil {
		return nil, err
	}
	id := groupSnapshotIDFor(name)
	members := make([]string, len(sources))
	for i, v := range sources {
		members[i] = memberSnapshotIDFor(name, v)
	}
	// One lock for the whole group: the group, every member and every
	// source volume. Every call that changes a volume through the driver
	// takes that volume's lock, so none runs between the first copy and
	// the last.
	unlock, err := s.d.lock(ctx, slices.Concat([]string{id}, members, sources)...)
	if err != nil {
		return nil, err
	}
	defer unlock()
	st := s.d.store.current()
	if g := st.GroupSnapshots.Get(id); g != nil {
		if !slices.Equal(g.SourceVolumeIDs, sources) {
			return nil, status.Errorf(codes.AlreadyExists, "group snapshot %q exists but was taken of volumes %v", name, g.SourceVolumeIDs)
		}
		return &csi.CreateVolumeGroupSnapshotResponse{GroupSnapshot: csiGroupSnapshot(st, g)}, nil
	}
	vols := make([]*volume, len(sources))
	for i, v := range sources {
		if vols[i] = st.Volumes.Get(v); vols[i] == nil {
			return nil, status.Errorf(codes.NotFound, "source volume %q does not exist", v)
		}
		if st.Snapshots.Get(members[i]) != nil {
			return nil, status.Errorf(codes.Internal, "snapshot %s of group snapshot %q is recorded without its group", members[i], name)
		}
	}
	g, err := s.d.takeGroupSnapshot(ctx, id, name, vols, members)
	if err != nil {
		return nil, err
	}
	return &csi.CreateVolumeGroupSnapshotResponse{GroupSnapshot: csiGroupSnapshot(s.d.store.current(), g)}, nil
}

// groupSources checks the source volume IDs of a group and sorts them.
func groupSources(ids []string) ([]string, error) {
	if len(ids) == 0 {
		return nil, status.Error(codes.InvalidArgument, "source volume IDs are required")
	}
	for _, id := range ids {
		if err := checkName("source volume ID", id); err != nil {
			return nil, err
		}
	}
	sorted := slices.Sorted(slices.Values(ids))
	if len(slices.Compact(slices.Clone(sorted))) != len(sorted) {
		return nil, status.Errorf(codes.InvalidArgument, "source volume IDs %v name a volume twice", ids)
	}
	return sorted, nil
}

// takeGroupSnapshot copies every member's data, then records the group and
// all its members in one write of the state: a driver killed before that
// write has recorded nothing of the group, and the data it copied is set
// aside at the next start as any creation cut short.
func (d *Driver) takeGroupSnapshot(ctx context.Context, id, name string, vols []*volume, members []string) (*groupSnapshot, error) {
	var size int64
	for _, v := range vols {
		size += v.CapacityBytes
	}
	if err := d.store.reserve(id, size, d.cfg.Capacity); err != nil {
		return nil, status.Errorf(codes.ResourceExhausted, "group snapshot %q: %v", name, err)
	}
	defer d.store.release(id)
	var copied []string
	cleanup := func() {
		for _, p := range copied {
			_ = removeData(p)
		}
	}
	for i, vol := range vols {
		src, err := d.disk.volumePath(vol.ID, vol.AccessType)
		if err != nil {
			cleanup()
			return nil, status.Errorf(codes.Internal, "volume path: %v", err)
		}
		dst, err := d.disk.snapshotPath(members[i], vol.AccessType)
		if err != nil {
			cleanup()
			return nil, status.Errorf(codes.Internal, "snapshot path: %v", err)
		}
		copied = append(copied, dst)
		if err := copyData(ctx, src, dst, vol.AccessType, 0); err != nil {
			cleanup()
			return nil, dataError("group snapshot "+name, err)
		}
		if d.cfg.memberCopied != nil {
			d.cfg.memberCopied(vol.ID)
		}
	}
	if err := syncDir(d.disk.snapshotsDir()); err != nil {
		cleanup()
		return nil, dataError("group snapshot "+name, err)
	}
	now := time.Now().UTC()
	g := &groupSnapshot{ID: id, Name: name, CreatedAt: now}
	err := d.store.commit(id, func(st *state) error {
		for i, vol := range vols {
			st.Snapshots.Put(members[i], &snapshot{
				ID: members[i], Name: name + "/" + vol.ID, SourceVolumeID: vol.ID, SizeBytes: vol.CapacityBytes,
				AccessType: vol.AccessType, CreatedAt: now, GroupSnapshotID: id,
			})
			g.SourceVolumeIDs = append(g.SourceVolumeIDs, vol.ID)
			g.SnapshotIDs = append(g.SnapshotIDs, members[i])
		}
		st.GroupSnapshots.Put(id, g)
		return nil
	})
	if err != nil {
		cleanup()
		return nil, status.Errorf(codes.Internal, "group snapshot %q: %v", name, err)
	}
	return g, nil
}

// DeleteVolumeGroupSnapshot deletes a group snapshot and its members; one
// that does not exist is already deleted. The snapshot IDs of the request
// must be the group's members, in any order: a CO that names others does
// not know what it deletes.
func (s *groupControllerServer) DeleteVolumeGroupSnapshot(ctx context.Context, req *csi.DeleteVolumeGroupSnapshotRequest) (*csi.DeleteVolumeGroupSnapshotResponse, error) {
	id := req.GetGroupSnapshotId()
	if err := checkGroupRequest(id, req.GetSnapshotIds()); err != nil {
		return nil, err
	}
	g, unlock, err := s.d.lockedGroup(ctx, id)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if g == nil {
		return &csi.DeleteVolumeGroupSnapshotResponse{}, nil
	}
	if err := membersMatch(g, req.GetSnapshotIds(), true); err != nil {
		return nil, err
	}
	// As DeleteSnapshot: if removing the data fails, the group stays
	// recorded whole and the CO retries.
	err = s.d.deleteSnapshots("group snapshot "+id, g.SnapshotIDs, func(st *state) {
		st.GroupSnapshots.Delete(id)
	})
	if err != nil {
		return nil, err
	}
	return &csi.DeleteVolumeGroupSnapshotResponse{}, nil
}

// GetVolumeGroupSnapshot returns a group snapshot, NotFound if there is
// none. Snapshot IDs, if the request names any, must be the group's members.
func (s *groupControllerServer) GetVolumeGroupSnapshot(ctx context.Context, req *csi.GetVolumeGroupSnapshotRequest) (*csi.GetVolumeGroupSnapshotResponse, error) {
	id := req.GetGroupSnapshotId()
	if err := checkGroupRequest(id, req.GetSnapshotIds()); err != nil {
		return nil, err
	}
	st := s.d.store.current()
	g := st.GroupSnapshots.Get(id)
	if g == nil {
		return nil, status.Errorf(codes.NotFound, "group snapshot %q does not exist", id)
	}
	if err := membersMatch(g, req.GetSnapshotIds(), false); err != nil {
		return nil, err
	}
	return &csi.GetVolumeGroupSnapshotResponse{GroupSnapshot: csiGroupSnapshot(st, g)}, nil
}

func checkGroupRequest(id string, snapshotIDs []string) error {
	if err := checkName("group snapshot ID", id); err != nil {
		return err
	}
	for _, m := range snapshotIDs {
		if err := checkName("snapshot ID", m); err != nil {
			return err
		}
	}
	return nil
}

// membersMatch checks the snapshot IDs a request names against the group's
// members. required: an empty list is a mismatch too (deletion); otherwise
// an empty list asks for no check.
func membersMatch(g *groupSnapshot, ids []string, required bool) error {
	if len(ids) == 0 && !required {
		return nil
	}
	if !slices.Equal(slices.Compact(slices.Sorted(slices.Values(ids))), slices.Sorted(slices.Values(g.SnapshotIDs))) {
		return status.Errorf(codes.InvalidArgument, "snapshot IDs %v are not the members of group snapshot %s: %v", ids, g.ID, g.SnapshotIDs)
	}
	return nil
}

// lockedGroup locks a group snapshot and its members and returns it, or
// nil with nothing locked if there is none. It takes the group's lock
// first, so it waits for a creation of the group under way. Members never
// change once a group is recorded, so the members read then are the ones
// locked.
func (d *Driver) lockedGroup(ctx context.Context, id string) (*groupSnapshot, func(), error) {
	unlock, err := d.lock(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	g := d.store.current().GroupSnapshots.Get(id)
	unlock()
	if g == nil {
		return nil, func() {}, nil
	}
	if unlock, err = d.lock(ctx, append([]string{id}, g.SnapshotIDs...)...); err != nil {
		return nil, nil, err
	}
	if g = d.store.current().GroupSnapshots.Get(id); g == nil {
		return nil, unlock, nil
	}
	return g, unlock, nil
}

func csiGroupSnapshot(st *state, g *groupSnapshot) *csi.VolumeGroupSnapshot {
	out := &csi.VolumeGroupSnapshot{
		GroupSnapshotId: g.ID,
		CreationTime:    timestamppb.New(g.CreatedAt),
		ReadyToUse:      true,
	}
	for _, m := range g.SnapshotIDs {
		if snap := st.Snapshots.Get(m); snap != nil {
			out.Snapshots = append(out.Snapshots, csiSnapshot(snap))
		}
	}
	return out
}
