package hostpath

import (
	"context"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"
)

// CreateSnapshot copies a volume into a new snapshot, or returns the
// snapshot if one of that name exists for the same volume.
func (s *controllerServer) CreateSnapshot(ctx context.Context, req *csi.CreateSnapshotRequest) (*csi.CreateSnapshotResponse, error) {
	name, srcID := req.GetName(), req.GetSourceVolumeId()
	if err := checkName("snapshot name", name); err != nil {
		return nil, err
	}
	if err := checkName("source volume ID", srcID); err != nil {
		return nil, err
	}
	id := snapshotIDFor(name)
	unlock, err := s.d.lock(ctx, id, srcID)
	if err != nil {
		return nil, err
	}
	defer unlock()
	st := s.d.store.current()
	if snap := st.Snapshots.Get(id); snap != nil {
		if snap.SourceVolumeID != srcID {
			return nil, status.Errorf(codes.AlreadyExists, "snapshot %q exists but was taken of volume %s", name, snap.SourceVolumeID)
		}
		return &csi.CreateSnapshotResponse{Snapshot: csiSnapshot(snap)}, nil
	}
	vol := st.Volumes.Get(srcID)
	if vol == nil {
		return nil, status.Errorf(codes.NotFound, "source volume %q does not exist", srcID)
	}
	snap, err := s.d.takeSnapshot(ctx, id, name, vol)
	if err != nil {
		return nil, err
	}
	return &csi.CreateSnapshotResponse{Snapshot: csiSnapshot(snap)}, nil
}

// takeSnapshot copies vol's data, then records the snapshot, the same way
// createVolume does: unrecorded data is swept.
func (d *Driver) takeSnapshot(ctx context.Context, id, name string, vol *volume) (*snapshot, error) {
	src, err := d.disk.volumePath(vol.ID, vol.AccessType)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "volume path: %v", err)
	}
	dst, err := d.disk.snapshotPath(id, vol.AccessType)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "snapshot path: %v", err)
	}
	if err := d.store.reserve(id, vol.CapacityBytes, d.cfg.Capacity); err != nil {
		return nil, status.Errorf(codes.ResourceExhausted, "snapshot %q: %v", name, err)
	}
	defer d.store.release(id)
	if err := copyData(ctx, src, dst, vol.AccessType, 0); err != nil {
		_ = removeData(dst)
		return nil, dataError("snapshot "+name, err)
	}
	if err := syncDir(d.disk.snapshotsDir()); err != nil {
		_ = removeData(dst)
		return nil, dataError("snapshot "+name, err)
	}
	snap := &snapshot{
		ID: id, Name: name, SourceVolumeID: vol.ID, SizeBytes: vol.CapacityBytes,
		AccessType: vol.AccessType, CreatedAt: time.Now().UTC(),
	}
	err = d.store.commit(id, func(st *state) error {
		st.Snapshots.Put(id, snap)
		return nil
	})
	if err != nil {
		_ = removeData(dst)
		return nil, status.Errorf(codes.Internal, "snapshot %q: %v", name, err)
	}
	return snap, nil
}

// DeleteSnapshot deletes a snapshot; one that does not exist is already deleted.
func (s *controllerServer) DeleteSnapshot(ctx context.Context, req *csi.DeleteSnapshotRequest) (*csi.DeleteSnapshotResponse, error) {
	id := req.GetSnapshotId()
	if err := checkName("snapshot ID", id); err != nil {
		return nil, err
	}
	unlock, err := s.d.lock(ctx, id)
	if err != nil {
		return nil, err
	}
	defer unlock()
	snap := s.d.store.current().Snapshots.Get(id)
	if snap == nil {
		return &csi.DeleteSnapshotResponse{}, nil
	}
	// The CSI spec's rule for a snapshot reported with a group snapshot ID:
	// it cannot be deleted alone, the CO must delete the whole group, and
	// the SP refuses with InvalidArgument.
	if snap.GroupSnapshotID != "" {
		return nil, status.Errorf(codes.InvalidArgument,
			"snapshot %s is part of group snapshot %s and cannot be deleted alone: delete the group with DeleteVolumeGroupSnapshot",
			id, snap.GroupSnapshotID)
	}
	if err := s.d.deleteSnapshots("snapshot "+id, []string{id}, nil); err != nil {
		return nil, err
	}
	return &csi.DeleteSnapshotResponse{}, nil
}

// deleteSnapshots removes the data of the recorded snapshots among ids,
// then, in one write of the state, their records and what forget (if set)
// drops with them. Data first: if removing it fails, everything stays
// recorded and the CO retries. what names the deletion in the errors
// ("snapshot <id>"). The caller holds the lock of ids.
func (d *Driver) deleteSnapshots(what string, ids []string, forget func(*state)) error {
	st := d.store.current()
	for _, id := range ids {
		snap := st.Snapshots.Get(id)
		if snap == nil {
			continue
		}
		path, err := d.disk.snapshotPath(id, snap.AccessType)
		if err != nil {
			return status.Errorf(codes.Internal, "snapshot path: %v", err)
		}
		if err := removeData(path); err != nil {
			return status.Errorf(codes.Internal, "delete %s: %v", what, err)
		}
	}
	err := d.store.update(func(st *state) error {
		for _, id := range ids {
			st.Snapshots.Delete(id)
		}
		if forget != nil {
			forget(st)
		}
		return nil
	})
	if err != nil {
		return status.Errorf(codes.Internal, "delete %s: %v", what, err)
	}
	return nil
}

// GetSnapshot returns one snapshot, NotFound if there is none.
func (s *controllerServer) GetSnapshot(_ context.Context, req *csi.GetSnapshotRequest) (*csi.GetSnapshotResponse, error) {
	id := req.GetSnapshotId()
	if err := checkName("snapshot ID", id); err != nil {
		return nil, err
	}
	snap := s.d.store.current().Snapshots.Get(id)
	if snap == nil {
		return nil, status.Errorf(codes.NotFound, "snapshot %q does not exist", id)
	}
	return &csi.GetSnapshotResponse{Snapshot: csiSnapshot(snap)}, nil
}

// ListSnapshots lists snapshots, all or those matching the snapshot ID or
// source volume ID filters, a page at a time.
func (s *controllerServer) ListSnapshots(_ context.Context, req *csi.ListSnapshotsRequest) (*csi.ListSnapshotsResponse, error) {
	if err := checkMaxEntries(req.GetMaxEntries()); err != nil {
		return nil, err
	}
	if err := checkPageToken(req.GetStartingToken(), snapshotIDPrefix); err != nil {
		return nil, err
	}
	match, err := snapshotFilter(req)
	if err != nil {
		return nil, err
	}
	st := s.d.store.current()
	matching := func(yield func(string) bool) {
		for id, snap := range st.Snapshots.All() {
			if match(snap) && !yield(id) {
				return
			}
		}
	}
	ids, next := page(matching, req.GetStartingToken(), req.GetMaxEntries())
	resp := &csi.ListSnapshotsResponse{NextToken: next}
	for _, id := range ids {
		resp.Entries = append(resp.Entries, &csi.ListSnapshotsResponse_Entry{Snapshot: csiSnapshot(st.Snapshots.Get(id))})
	}
	return resp, nil
}

func snapshotFilter(req *csi.ListSnapshotsRequest) (func(*snapshot) bool, error) {
	id, volID := req.GetSnapshotId(), req.GetSourceVolumeId()
	if id != "" {
		if err := checkName("snapshot ID", id); err != nil {
			return nil, err
		}
	}
	if volID != "" {
		if err := checkName("source volume ID", volID); err != nil {
			return nil, err
		}
	}
	return func(snap *snapshot) bool {
		return (id == "" || snap.ID == id) && (volID == "" || snap.SourceVolumeID == volID)
	}, nil
}

func csiSnapshot(snap *snapshot) *csi.Snapshot {
	return &csi.Snapshot{
		SnapshotId:      snap.ID,
		SourceVolumeId:  snap.SourceVolumeID,
		SizeBytes:       snap.SizeBytes,
		CreationTime:    timestamppb.New(snap.CreatedAt),
		ReadyToUse:      true,
		GroupSnapshotId: snap.GroupSnapshotID,
	}
}
