package csi

import (
	"context"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
)

// snapshotTimeout bounds one CreateSnapshot, DeleteSnapshot or group call:
// the csi-snapshotter's --timeout default. A timed-out CreateSnapshot is
// retried under the same name; the driver's idempotency picks it up.
const snapshotTimeout = time.Minute

// CreateSnapshot asks the driver to take a snapshot and returns it as the
// driver reports it (ready_to_use may still be false: call again with the
// same request until it is).
func (e *Endpoint) CreateSnapshot(ctx context.Context, req *csi.CreateSnapshotRequest) (*csi.Snapshot, error) {
	resp, err := timed(ctx, e, "CreateSnapshot", snapshotTimeout, e.controller.CreateSnapshot, req)
	if err != nil {
		return nil, err
	}
	return resp.GetSnapshot(), nil
}

// DeleteSnapshot deletes a backend snapshot; secrets are the snapshotter
// secret's data (nil without one). A snapshot that does not exist is
// deleted (the driver answers OK).
func (e *Endpoint) DeleteSnapshot(ctx context.Context, snapshotID string, secrets map[string]string) error {
	_, err := timed(ctx, e, "DeleteSnapshot", snapshotTimeout, e.controller.DeleteSnapshot,
		&csi.DeleteSnapshotRequest{SnapshotId: snapshotID, Secrets: secrets})
	return err
}

// GetSnapshot reads one snapshot (GET_SNAPSHOT); nil with a NotFound error
// when the driver has none of that ID.
func (e *Endpoint) GetSnapshot(ctx context.Context, snapshotID string, secrets map[string]string) (*csi.Snapshot, error) {
	resp, err := timed(ctx, e, "GetSnapshot", listTimeout, e.controller.GetSnapshot,
		&csi.GetSnapshotRequest{SnapshotId: snapshotID, Secrets: secrets})
	if err != nil {
		return nil, err
	}
	return resp.GetSnapshot(), nil
}

// ListSnapshots returns the snapshots the endpoint reports for req's
// filters (a snapshot ID, a source volume, or none for all), following
// pages of listPage; req's token and page size are overwritten.
func (e *Endpoint) ListSnapshots(ctx context.Context, req *csi.ListSnapshotsRequest) ([]*csi.Snapshot, error) {
	ctx, cancel := context.WithTimeout(ctx, listTimeout)
	defer cancel()
	var out []*csi.Snapshot
	req.StartingToken, req.MaxEntries = "", listPage
	for {
		start := time.Now()
		resp, err := e.controller.ListSnapshots(ctx, req)
		e.metrics.observe(e.Info.Driver, "ListSnapshots", err, start)
		if err != nil {
			return nil, err
		}
		for _, entry := range resp.GetEntries() {
			out = append(out, entry.GetSnapshot())
		}
		if req.StartingToken = resp.GetNextToken(); req.StartingToken == "" {
			return out, nil
		}
	}
}

// CreateVolumeGroupSnapshot asks the driver's GroupController service to
// take one snapshot of every source volume at once.
func (e *Endpoint) CreateVolumeGroupSnapshot(ctx context.Context, req *csi.CreateVolumeGroupSnapshotRequest) (*csi.VolumeGroupSnapshot, error) {
	resp, err := timed(ctx, e, "CreateVolumeGroupSnapshot", snapshotTimeout, e.group.CreateVolumeGroupSnapshot, req)
	if err != nil {
		return nil, err
	}
	return resp.GetGroupSnapshot(), nil
}

// DeleteVolumeGroupSnapshot deletes a group snapshot and its members.
func (e *Endpoint) DeleteVolumeGroupSnapshot(ctx context.Context, req *csi.DeleteVolumeGroupSnapshotRequest) error {
	_, err := timed(ctx, e, "DeleteVolumeGroupSnapshot", snapshotTimeout, e.group.DeleteVolumeGroupSnapshot, req)
	return err
}

// GetVolumeGroupSnapshot reads one group snapshot.
func (e *Endpoint) GetVolumeGroupSnapshot(ctx context.Context, req *csi.GetVolumeGroupSnapshotRequest) (*csi.VolumeGroupSnapshot, error) {
	resp, err := timed(ctx, e, "GetVolumeGroupSnapshot", snapshotTimeout, e.group.GetVolumeGroupSnapshot, req)
	if err != nil {
		return nil, err
	}
	return resp.GetGroupSnapshot(), nil
}
