package hostpath

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

type controllerServer struct {
	csi.UnimplementedControllerServer
	d *Driver
}

func (s *controllerServer) ControllerGetCapabilities(context.Context, *csi.ControllerGetCapabilitiesRequest) (*csi.ControllerGetCapabilitiesResponse, error) {
	types := []csi.ControllerServiceCapability_RPC_Type{
		csi.ControllerServiceCapability_RPC_CREATE_DELETE_VOLUME,
		csi.ControllerServiceCapability_RPC_LIST_VOLUMES,
		csi.ControllerServiceCapability_RPC_GET_CAPACITY,
		csi.ControllerServiceCapability_RPC_CREATE_DELETE_SNAPSHOT,
		csi.ControllerServiceCapability_RPC_LIST_SNAPSHOTS,
		csi.ControllerServiceCapability_RPC_GET_SNAPSHOT,
		csi.ControllerServiceCapability_RPC_CLONE_VOLUME,
		csi.ControllerServiceCapability_RPC_EXPAND_VOLUME,
		csi.ControllerServiceCapability_RPC_GET_VOLUME,
		csi.ControllerServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER,
		csi.ControllerServiceCapability_RPC_MODIFY_VOLUME,
		csi.ControllerServiceCapability_RPC_GET_VOLUME_HEALTH,
		csi.ControllerServiceCapability_RPC_LIST_VOLUME_HEALTH,
	}
	if s.d.cfg.AttachRequired {
		types = append(types,
			csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME,
			csi.ControllerServiceCapability_RPC_PUBLISH_READONLY,
			csi.ControllerServiceCapability_RPC_LIST_VOLUMES_PUBLISHED_NODES,
		)
	}
	caps := make([]*csi.ControllerServiceCapability, 0, len(types))
	for _, t := range types {
		caps = append(caps, &csi.ControllerServiceCapability{Type: &csi.ControllerServiceCapability_Rpc{
			Rpc: &csi.ControllerServiceCapability_RPC{Type: t},
		}})
	}
	return &csi.ControllerGetCapabilitiesResponse{Capabilities: caps}, nil
}

// CreateVolume creates the volume named in req, or returns it if it exists
// and matches req.
func (s *controllerServer) CreateVolume(ctx context.Context, req *csi.CreateVolumeRequest) (*csi.CreateVolumeResponse, error) {
	want, err := s.d.volumeFromRequest(req)
	if err != nil {
		return nil, err
	}
	unlock, err := s.d.lock(ctx, want.ID, want.Source.SnapshotID, want.Source.VolumeID)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if existing := s.d.store.current().Volumes.Get(want.ID); existing != nil {
		if conflict := volumeConflict(existing, want, req.GetCapacityRange()); conflict != "" {
			return nil, status.Errorf(codes.AlreadyExists, "volume %q exists but %s", want.Name, conflict)
		}
		if err := s.d.recreateMutable(existing, want.MutableParameters); err != nil {
			return nil, err
		}
		return &csi.CreateVolumeResponse{Volume: s.d.csiVolume(existing)}, nil
	}
	vol, err := s.d.createVolume(ctx, want, req.GetCapacityRange().GetLimitBytes())
	if err != nil {
		return nil, err
	}
	return &csi.CreateVolumeResponse{Volume: s.d.csiVolume(vol)}, nil
}

// volumeFromRequest checks req and returns the volume it asks for.
func (d *Driver) volumeFromRequest(req *csi.CreateVolumeRequest) (*volume, error) {
	if err := checkName("volume name", req.GetName()); err != nil {
		return nil, err
	}
	t, err := checkCapabilities(req.GetVolumeCapabilities(), d.cfg.Network)
	if err != nil {
		return nil, err
	}
	size, err := requestedBytes(req.GetCapacityRange())
	if err != nil {
		return nil, err
	}
	if err := CheckMutableParameters(req.GetMutableParameters()); err != nil {
		return nil, err
	}
	if !d.cfg.Network && !d.reachable(req.GetAccessibilityRequirements()) {
		return nil, status.Errorf(codes.ResourceExhausted,
			"cannot provision here: this driver's volumes are accessible from node %q only, and the accessibility requirements exclude it", d.cfg.NodeID)
	}
	src, err := sourceOf(req.GetVolumeContentSource())
	if err != nil {
		return nil, err
	}
	return &volume{
		ID: volumeIDFor(req.GetName()), Name: req.GetName(), CapacityBytes: size,
		AccessType: t, NodeID: d.cfg.NodeID, Source: src,
		MutableParameters: maps.Clone(req.GetMutableParameters()),
	}, nil
}

func sourceOf(s *csi.VolumeContentSource) (contentSource, error) {
	switch {
	case s == nil:
		return contentSource{}, nil
	case s.GetSnapshot() != nil:
		id := s.GetSnapshot().GetSnapshotId()
		return contentSource{SnapshotID: id}, checkName("source snapshot ID", id)
	case s.GetVolume() != nil:
		id := s.GetVolume().GetVolumeId()
		return contentSource{VolumeID: id}, checkName("source volume ID", id)
	}
	return contentSource{}, status.Error(codes.InvalidArgument, "volume content source: neither a snapshot nor a volume")
}

// volumeConflict says how an existing volume differs from a repeated
// request for it, or "".
func volumeConflict(existing, want *volume, r *csi.CapacityRange) string {
	switch {
	case !fitsRange(existing.CapacityBytes, r):
		return fmt.Sprintf("has %d bytes, outside the requested range", existing.CapacityBytes)
	case existing.AccessType != want.AccessType:
		return fmt.Sprintf("is a %s volume", existing.AccessType)
	case existing.Source != want.Source:
		return "was created from a different content source"
	}
	return ""
}

// createVolume makes want's data, then records it; until it is recorded,
// nothing was created (and a crash leaves only data the next start sets aside).
func (d *Driver) createVolume(ctx context.Context, want *volume, limit int64) (*volume, error) {
	srcPath, err := d.sourceData(want, limit)
	if err != nil {
		return nil, err
	}
	path, err := d.disk.volumePath(want.ID, want.AccessType)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "volume path: %v", err)
	}
	if err := d.store.reserve(want.ID, want.CapacityBytes, d.cfg.Capacity); err != nil {
		return nil, status.Errorf(codes.ResourceExhausted, "volume %q: %v", want.Name, err)
	}
	defer d.store.release(want.ID)
	if err := makeData(ctx, srcPath, path, want); err != nil {
		_ = removeData(path)
		return nil, dataError("create volume "+want.Name, err)
	}
	want.CreatedAt = time.Now().UTC()
	err = d.store.commit(want.ID, func(st *state) error {
		st.Volumes.Put(want.ID, want)
		return nil
	})
	if err != nil {
		_ = removeData(path)
		return nil, status.Errorf(codes.Internal, "create volume %q: %v", want.Name, err)
	}
	return want, nil
}

func makeData(ctx context.Context, srcPath, path string, want *volume) error {
	var err error
	if srcPath == "" {
		err = createData(path, want.AccessType, want.CapacityBytes)
	} else {
		err = copyData(ctx, srcPath, path, want.AccessType, want.CapacityBytes)
	}
	if err != nil {
		return err
	}
	return syncDir(filepath.Dir(path))
}

// dataError turns a failure on disk into a status: a file too large for the
// filesystem is the caller's range, anything else is ours.
func dataError(what string, err error) error {
	switch {
	case isTooLarge(err):
		return status.Errorf(codes.OutOfRange, "%s: the node's filesystem cannot hold a file that large: %v", what, err)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return status.Errorf(codes.Aborted, "%s: %v", what, err)
	}
	return status.Errorf(codes.Internal, "%s: %v", what, err)
}

// sourceData finds the data want is created from ("" for an empty volume)
// and grows want to the source's size if the range allows.
func (d *Driver) sourceData(want *volume, limit int64) (string, error) {
	st := d.store.current()
	var (
		path string
		size int64
		t    accessType
		err  error
	)
	switch {
	case want.Source.SnapshotID != "":
		snap := st.Snapshots.Get(want.Source.SnapshotID)
		if snap == nil {
			return "", status.Errorf(codes.NotFound, "source snapshot %q does not exist", want.Source.SnapshotID)
		}
		size, t = snap.SizeBytes, snap.AccessType
		path, err = d.disk.snapshotPath(snap.ID, t)
	case want.Source.VolumeID != "":
		src := st.Volumes.Get(want.Source.VolumeID)
		if src == nil {
			return "", status.Errorf(codes.NotFound, "source volume %q does not exist", want.Source.VolumeID)
		}
		size, t = src.CapacityBytes, src.AccessType
		path, err = d.disk.volumePath(src.ID, t)
	default:
		return "", nil
	}
	if err != nil {
		return "", status.Errorf(codes.Internal, "source path: %v", err)
	}
	if t != want.AccessType {
		return "", status.Errorf(codes.InvalidArgument, "the source holds a %s volume; a %s volume cannot be made from it", t, want.AccessType)
	}
	if want.CapacityBytes < size {
		if limit != 0 && limit < size {
			return "", status.Errorf(codes.OutOfRange, "the source holds %d bytes, more than the limit of %d", size, limit)
		}
		want.CapacityBytes = size
	}
	return path, nil
}

// DeleteVolume deletes a volume; one that does not exist is already deleted.
func (s *controllerServer) DeleteVolume(ctx context.Context, req *csi.DeleteVolumeRequest) (*csi.DeleteVolumeResponse, error) {
	id := req.GetVolumeId()
	if err := checkName("volume ID", id); err != nil {
		return nil, err
	}
	unlock, err := s.d.lock(ctx, id)
	if err != nil {
		return nil, err
	}
	defer unlock()
	vol := s.d.store.current().Volumes.Get(id)
	if vol == nil {
		return &csi.DeleteVolumeResponse{}, nil
	}
	if why := vol.inUse(); why != "" {
		return nil, status.Errorf(codes.FailedPrecondition, "volume %s cannot be deleted: %s", id, why)
	}
	path, err := s.d.disk.volumePath(id, vol.AccessType)
	if err != nil {
		return nil, status.Errorf(codes.Internal, "volume path: %v", err)
	}
	// Data first: if removing it fails, the volume stays listed and the CO retries.
	if err := removeData(path); err != nil {
		return nil, status.Errorf(codes.Internal, "delete volume %s: %v", id, err)
	}
	err = s.d.store.update(func(st *state) error {
		st.Volumes.Delete(id)
		return nil
	})
	if err != nil {
		return nil, status.Errorf(codes.Internal, "delete volume %s: %v", id, err)
	}
	return &csi.DeleteVolumeResponse{}, nil
}

func (s *controllerServer) ValidateVolumeCapabilities(ctx context.Context, req *csi.ValidateVolumeCapabilitiesRequest) (*csi.ValidateVolumeCapabilitiesResponse, error) {
	if err := checkName("volume ID", req.GetVolumeId()); err != nil {
		return nil, err
	}
	if len(req.GetVolumeCapabilities()) == 0 {
		return nil, status.Error(codes.InvalidArgument, "volume capabilities are required")
	}
	types := make([]accessType, 0, len(req.GetVolumeCapabilities()))
	for _, c := range req.GetVolumeCapabilities() {
		t, err := accessTypeOf(c)
		if err != nil {
			return nil, err
		}
		types = append(types, t)
	}
	vol := s.d.store.current().Volumes.Get(req.GetVolumeId())
	if vol == nil {
		return nil, status.Errorf(codes.NotFound, "volume %q does not exist", req.GetVolumeId())
	}
	for i, c := range req.GetVolumeCapabilities() {
		if problem := capabilityProblem(c, s.d.cfg.Network); problem != "" {
			return &csi.ValidateVolumeCapabilitiesResponse{Message: problem}, nil
		}
		if types[i] != vol.AccessType {
			return &csi.ValidateVolumeCapabilitiesResponse{Message: fmt.Sprintf("volume %s is a %s volume", vol.ID, vol.AccessType)}, nil
		}
	}
	return &csi.ValidateVolumeCapabilitiesResponse{Confirmed: &csi.ValidateVolumeCapabilitiesResponse_Confirmed{
		VolumeContext:      req.GetVolumeContext(),
		VolumeCapabilities: req.GetVolumeCapabilities(),
		Parameters:         req.GetParameters(),
	}}, nil
}

// csiVolume is how a volume is shown to the CO. A network volume has no
// topology: it is reachable from every node.
func (d *Driver) csiVolume(v *volume) *csi.Volume {
	out := &csi.Volume{
		VolumeId:      v.ID,
		CapacityBytes: v.CapacityBytes,
		ContentSource: v.Source.csi(),
	}
	if v.NodeID != "" {
		out.AccessibleTopology = []*csi.Topology{d.nodeTopology(v.NodeID)}
	}
	return out
}

func (c contentSource) csi() *csi.VolumeContentSource {
	switch {
	case c.SnapshotID != "":
		return &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{
			Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: c.SnapshotID},
		}}
	case c.VolumeID != "":
		return &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Volume{
			Volume: &csi.VolumeContentSource_VolumeSource{VolumeId: c.VolumeID},
		}}
	}
	return nil
}

func (d *Driver) nodeTopology(node string) *csi.Topology {
	return &csi.Topology{Segments: map[string]string{d.cfg.TopologyKey: node}}
}

// reachable reports whether a volume on this node satisfies req: no
// topologies asked for, or one of them is exactly this node's.
func (d *Driver) reachable(req *csi.TopologyRequirement) bool {
	asked := slices.Concat(req.GetRequisite(), req.GetPreferred())
	if len(asked) == 0 {
		return true
	}
	for _, t := range asked {
		if d.isThisNode(t) {
			return true
		}
	}
	return false
}

func (d *Driver) isThisNode(t *csi.Topology) bool {
	segs := t.GetSegments()
	return len(segs) == 1 && segs[d.cfg.TopologyKey] == d.cfg.NodeID
}
