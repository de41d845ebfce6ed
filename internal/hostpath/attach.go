package hostpath

import (
	"context"
	"errors"
	"fmt"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

var errAttachLimit = errors.New("attach limit reached")

// ControllerPublishVolume attaches a volume to a node. There is no device to
// move: the attachment is a record, which NodeStageVolume requires, so the
// CO's attach/detach ordering is honored as with real storage.
func (s *controllerServer) ControllerPublishVolume(ctx context.Context, req *csi.ControllerPublishVolumeRequest) (*csi.ControllerPublishVolumeResponse, error) {
	if !s.d.cfg.AttachRequired {
		return nil, status.Error(codes.Unimplemented, "this driver runs without attaching (attach required is off)")
	}
	volID, node := req.GetVolumeId(), req.GetNodeId()
	if err := checkName("volume ID", volID); err != nil {
		return nil, err
	}
	if err := checkName("node ID", node); err != nil {
		return nil, err
	}
	t, err := checkCapability(req.GetVolumeCapability(), s.d.cfg.Network)
	if err != nil {
		return nil, err
	}
	unlock, err := s.d.lock(ctx, volID)
	if err != nil {
		return nil, err
	}
	defer unlock()
	vol := s.d.store.current().Volumes.Get(volID)
	switch {
	case vol == nil:
		return nil, status.Errorf(codes.NotFound, "volume %q does not exist", volID)
	case vol.NodeID != "" && node != vol.NodeID:
		return nil, status.Errorf(codes.NotFound, "node %q does not exist for this volume: it lives on node %q", node, vol.NodeID)
	case vol.NodeID == "" && s.d.cfg.NodeEndpoints[node] == "":
		return nil, status.Errorf(codes.NotFound, "node %q does not exist: this driver serves nodes %s", node, nodeList(s.d.cfg.NodeEndpoints))
	case t != vol.AccessType:
		return nil, status.Errorf(codes.InvalidArgument, "volume %s is a %s volume", volID, vol.AccessType)
	}
	readOnly := req.GetReadonly() || isReadOnlyMode(req.GetVolumeCapability())
	if a, ok := vol.Attachments[node]; ok {
		if a.ReadOnly != readOnly {
			return nil, status.Errorf(codes.AlreadyExists, "volume %s is attached to node %s with readonly=%t", volID, node, a.ReadOnly)
		}
		return &csi.ControllerPublishVolumeResponse{}, nil
	}
	want := attachment{ReadOnly: readOnly, Mode: req.GetVolumeCapability().GetAccessMode().GetMode().String()}
	if why := attachConflict(vol, node, want); why != "" {
		return nil, status.Error(codes.FailedPrecondition, why)
	}
	if err := s.d.attach(volID, node, want); err != nil {
		return nil, err
	}
	return &csi.ControllerPublishVolumeResponse{}, nil
}

// attach records the attachment, checking the per-node limit in the same
// step so that concurrent attachments of different volumes cannot overshoot it.
func (d *Driver) attach(volID, node string, a attachment) error {
	limit := d.cfg.MaxVolumesPerNode
	err := d.store.update(func(st *state) error {
		if limit > 0 && st.attachedTo(node) >= limit {
			return fmt.Errorf("%w: node %s has %d volumes attached", errAttachLimit, node, limit)
		}
		put(&st.editVolume(volID).Attachments, node, &a)
		return nil
	})
	switch {
	case errors.Is(err, errAttachLimit):
		return status.Error(codes.ResourceExhausted, err.Error())
	case err != nil:
		return status.Errorf(codes.Internal, "attach volume %s: %v", volID, err)
	}
	return nil
}

// ControllerUnpublishVolume detaches a volume from a node, or from every
// node if none is named. A volume that does not exist is detached already.
func (s *controllerServer) ControllerUnpublishVolume(ctx context.Context, req *csi.ControllerUnpublishVolumeRequest) (*csi.ControllerUnpublishVolumeResponse, error) {
	if !s.d.cfg.AttachRequired {
		return nil, status.Error(codes.Unimplemented, "this driver runs without attaching (attach required is off)")
	}
	volID, node := req.GetVolumeId(), req.GetNodeId()
	if err := checkName("volume ID", volID); err != nil {
		return nil, err
	}
	if node != "" {
		if err := checkName("node ID", node); err != nil {
			return nil, err
		}
	}
	unlock, err := s.d.lock(ctx, volID)
	if err != nil {
		return nil, err
	}
	defer unlock()
	vol := s.d.store.current().Volumes.Get(volID)
	if vol == nil || len(vol.Attachments) == 0 {
		return &csi.ControllerUnpublishVolumeResponse{}, nil
	}
	if _, ok := vol.Attachments[node]; node != "" && !ok {
		return &csi.ControllerUnpublishVolumeResponse{}, nil
	}
	err = s.d.store.update(func(st *state) error {
		v := st.editVolume(volID)
		if node == "" {
			v.Attachments = nil
		} else {
			delete(v.Attachments, node)
		}
		return nil
	})
	if err != nil {
		return nil, status.Errorf(codes.Internal, "detach volume %s: %v", volID, err)
	}
	return &csi.ControllerUnpublishVolumeResponse{}, nil
}

// ControllerExpandVolume grows a volume, online or not. Block volumes need
// the node to refresh their loop device, so they ask for node expansion; so
// does every volume of a network driver, whose filesystem is grown on the
// node that mounts it.
func (s *controllerServer) ControllerExpandVolume(ctx context.Context, req *csi.ControllerExpandVolumeRequest) (*csi.ControllerExpandVolumeResponse, error) {
	id := req.GetVolumeId()
	if err := checkName("volume ID", id); err != nil {
		return nil, err
	}
	if req.GetCapacityRange() == nil {
		return nil, status.Error(codes.InvalidArgument, "capacity range is required")
	}
	size, err := requestedBytes(req.GetCapacityRange())
	if err != nil {
		return nil, err
	}
	if c := req.GetVolumeCapability(); c != nil {
		if _, err := checkCapability(c, s.d.cfg.Network); err != nil {
			return nil, err
		}
	}
	vol, unlock, err := s.d.lockedVolume(ctx, id)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := s.d.expand(vol, size, req.GetCapacityRange()); err != nil {
		return nil, err
	}
	return &csi.ControllerExpandVolumeResponse{
		CapacityBytes:         max(size, vol.CapacityBytes),
		NodeExpansionRequired: vol.AccessType == accessBlock || s.d.cfg.Network,
	}, nil
}

// expand grows vol to size; a volume already as large is left alone, and
// volumes never shrink.
func (d *Driver) expand(vol *volume, size int64, r *csi.CapacityRange) error {
	if size <= vol.CapacityBytes {
		if !fitsRange(vol.CapacityBytes, r) {
			return status.Errorf(codes.OutOfRange, "volume %s has %d bytes, above the limit; volumes do not shrink", vol.ID, vol.CapacityBytes)
		}
		return nil
	}
	if err := d.fitsAtAll("expand volume "+vol.ID, size); err != nil {
		return err
	}
	if err := d.store.reserve(vol.ID, size-vol.CapacityBytes, d.cfg.Capacity); err != nil {
		return status.Errorf(codes.ResourceExhausted, "expand volume %s: %v", vol.ID, err)
	}
	defer d.store.release(vol.ID)
	path, err := d.disk.volumePath(vol.ID, vol.AccessType)
	if err != nil {
		return status.Errorf(codes.Internal, "volume path: %v", err)
	}
	if err := resizeData(path, vol.AccessType, size); err != nil {
		return dataError("expand volume "+vol.ID, err)
	}
	err = d.store.commit(vol.ID, func(st *state) error {
		st.editVolume(vol.ID).CapacityBytes = size
		return nil
	})
	if err != nil {
		return status.Errorf(codes.Internal, "expand volume %s: %v", vol.ID, err)
	}
	return nil
}

// fitsAtAll refuses to grow a volume beyond the driver's whole capacity
// with OutOfRange: such a request is infeasible, it can never succeed
// however much is freed, so callers must not retry it as they retry
// ResourceExhausted (a size that fits the capacity but not the free part
// of it).
func (d *Driver) fitsAtAll(what string, size int64) error {
	if size > d.cfg.Capacity {
		return status.Errorf(codes.OutOfRange, "%s: %d bytes requested, more than this driver's whole capacity of %d bytes: it can never fit",
			what, size, d.cfg.Capacity)
	}
	return nil
}
