package hostpath

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// NodeGetInfo names the node this service is for; network volumes are
// reachable from every node, so network mode reports no topology.
func (s *nodeServer) NodeGetInfo(context.Context, *csi.NodeGetInfoRequest) (*csi.NodeGetInfoResponse, error) {
	info := &csi.NodeGetInfoResponse{NodeId: s.node, MaxVolumesPerNode: s.d.cfg.MaxVolumesPerNode}
	if !s.d.cfg.Network {
		info.AccessibleTopology = s.d.nodeTopology(s.node)
	}
	return info, nil
}

func (s *nodeServer) NodeGetCapabilities(context.Context, *csi.NodeGetCapabilitiesRequest) (*csi.NodeGetCapabilitiesResponse, error) {
	var caps []*csi.NodeServiceCapability
	for _, t := range []csi.NodeServiceCapability_RPC_Type{
		csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME,
		csi.NodeServiceCapability_RPC_GET_VOLUME_STATS,
		csi.NodeServiceCapability_RPC_EXPAND_VOLUME,
		csi.NodeServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER,
		csi.NodeServiceCapability_RPC_GET_VOLUME_HEALTH,
		csi.NodeServiceCapability_RPC_GET_STORAGE_HEALTH,
	} {
		caps = append(caps, &csi.NodeServiceCapability{Type: &csi.NodeServiceCapability_Rpc{
			Rpc: &csi.NodeServiceCapability_RPC{Type: t},
		}})
	}
	return &csi.NodeGetCapabilitiesResponse{Capabilities: caps}, nil
}

// servedVolume finds a volume staged or published on node at path and returns it
// with the resolved path it was mounted at. A volume not recorded there, or
// a path that no longer resolves where it was mounted, is NotFound, as the
// spec asks for a volume that does not exist at a path.
func (d *Driver) servedVolume(id, node, path string) (*volume, nodePath, error) {
	if err := checkName("volume ID", id); err != nil {
		return nil, nodePath{}, err
	}
	if path == "" {
		return nil, nodePath{}, status.Error(codes.InvalidArgument, "volume path is required")
	}
	vol := d.store.current().Volumes.Get(id)
	if vol == nil {
		return nil, nodePath{}, status.Errorf(codes.NotFound, "volume %q does not exist", id)
	}
	given := filepath.Clean(path)
	var real string
	if p, ok := vol.Publications[given]; ok && p.Node == node {
		real = p.realPath(given)
	} else if s := vol.staging(node); s != nil && s.Path == given {
		real = s.realPath()
	} else {
		return nil, nodePath{}, status.Errorf(codes.NotFound, "volume %s is neither staged nor published at %q", id, path)
	}
	if now, err := resolveExisting(given); err != nil || now != real {
		return nil, nodePath{}, status.Errorf(codes.NotFound, "volume %s was mounted at %s, which %q no longer resolves to", id, real, given)
	}
	return vol, nodePath{given: given, real: real}, nil
}

// NodeGetVolumeStats reports a volume's size as this node has it and what
// its data occupies on disk: for a mount volume the allocated bytes and the
// inodes (files and directories) of its directory, against the inodes of
// the filesystem holding it; for a block volume the allocated bytes of its
// file. A network volume's size on a node is the one the node last grew it
// to (volume.NodeSizes), so it lags a controller expansion until
// NodeExpandVolume. A volume whose data or mount is gone reports its size
// only (its health says why).
func (s *nodeServer) NodeGetVolumeStats(_ context.Context, req *csi.NodeGetVolumeStatsRequest) (*csi.NodeGetVolumeStatsResponse, error) {
	vol, path, err := s.d.servedVolume(req.GetVolumeId(), s.node, req.GetVolumePath())
	if err != nil {
		return nil, err
	}
	total := vol.nodeSize(s.node)
	usage := &csi.VolumeUsage{Unit: csi.VolumeUsage_BYTES, Total: total}
	resp := &csi.NodeGetVolumeStatsResponse{Usage: []*csi.VolumeUsage{usage}}
	if s.d.nodeCondition(vol, s.node, path).Abnormal {
		return resp, nil
	}
	data, err := s.d.disk.volumePath(vol.ID, vol.AccessType)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "volume path: %v", err)
	}
	used, err := usedBytes(data)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "volume %s usage: %v", vol.ID, err)
	}
	usage.Used, usage.Available = used, max(total-used, 0)
	if vol.AccessType == accessMount {
		inodes, err := inodeUsage(data)
		if err != nil {
			return nil, status.Errorf(codes.Internal, "volume %s inodes: %v", vol.ID, err)
		}
		resp.Usage = append(resp.Usage, inodes)
	}
	return resp, nil
}

// nodeCondition is abnormal when the volume's data is gone or path is no
// longer mounted.
func (d *Driver) nodeCondition(vol *volume, node string, path nodePath) condition {
	if c := d.dataCondition(vol); c.Abnormal {
		return c
	}
	if s := vol.staging(node); vol.AccessType == accessBlock && s != nil && s.Path == path.given {
		return condition{Message: "the volume is attached to a loop device"}
	}
	mounted, err := d.cfg.Mounter.IsMountPoint(path.real)
	switch {
	case err != nil:
		return condition{Abnormal: true, Status: csi.VolumeHealthErrorType_INACCESSIBLE, Reason: ReasonNotMounted,
			Message: fmt.Sprintf("cannot tell whether %s is mounted: %v", path.given, err)}
	case !mounted:
		return condition{Abnormal: true, Status: csi.VolumeHealthErrorType_INACCESSIBLE, Reason: ReasonNotMounted,
			Message: path.given + " is not mounted"}
	}
	return condition{Message: "the volume is mounted"}
}

// NodeExpandVolume makes the node see a volume's new size: the loop device
// of a block volume is refreshed; a mount volume, a directory, has nothing
// to grow on a node-local driver. On a network driver every volume's
// filesystem is grown on the node that mounts it: the node's record of the
// volume's size (volume.NodeSizes) becomes the volume's size.
func (s *nodeServer) NodeExpandVolume(ctx context.Context, req *csi.NodeExpandVolumeRequest) (*csi.NodeExpandVolumeResponse, error) {
	if err := checkName("volume ID", req.GetVolumeId()); err != nil {
		return nil, err
	}
	if c := req.GetVolumeCapability(); c != nil {
		if _, err := checkCapability(c, s.d.cfg.Network); err != nil {
			return nil, err
		}
	}
	unlock, err := s.d.lock(ctx, req.GetVolumeId())
	if err != nil {
		return nil, err
	}
	defer unlock()
	vol, _, err := s.d.servedVolume(req.GetVolumeId(), s.node, req.GetVolumePath())
	if err != nil {
		return nil, err
	}
	if r := req.GetCapacityRange(); r != nil {
		size, err := requestedBytes(r)
		if err != nil {
			return nil, err
		}
		if size > vol.CapacityBytes {
			return nil, status.Errorf(codes.OutOfRange, "volume %s has %d bytes; expand it through the controller first", vol.ID, vol.CapacityBytes)
		}
	}
	if vol.AccessType == accessBlock {
		data, err := s.d.disk.volumePath(vol.ID, vol.AccessType)
		if err != nil {
			return nil, status.Errorf(codes.Internal, "volume path: %v", err)
		}
		if err := s.d.cfg.Mounter.ResizeLoop(data); err != nil {
			return nil, status.Errorf(codes.Internal, "expand volume %s on the node: %v", vol.ID, err)
		}
	}
	if err := s.d.recordNodeExpansion(vol, s.node); err != nil {
		return nil, err
	}
	return &csi.NodeExpandVolumeResponse{CapacityBytes: vol.CapacityBytes}, nil
}

// recordNodeExpansion records, on a network driver, that node now has vol
// at its full size; a record already there is not written again.
func (d *Driver) recordNodeExpansion(vol *volume, node string) error {
	if !d.cfg.Network || vol.nodeSize(node) == vol.CapacityBytes {
		return nil
	}
	err := d.store.update(func(st *state) error {
		put(&st.editVolume(vol.ID).NodeSizes, node, &vol.CapacityBytes)
		return nil
	})
	if err != nil {
		return status.Errorf(codes.Internal, "record the expansion of volume %s on node %s: %v", vol.ID, node, err)
	}
	return nil
}
