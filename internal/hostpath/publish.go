package hostpath

import (
	"context"
	"errors"
	"io/fs"
	"os"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// NodePublishVolume bind-mounts a staged volume onto the target path: the
// staging directory of a mount volume, the loop device of a block volume
// (onto a file the driver creates). The publication is recorded before the
// mount, so that NodeUnpublishVolume can undo it even if the driver dies
// half way.
func (s *nodeServer) NodePublishVolume(ctx context.Context, req *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	if isEphemeral(req) {
		return s.publishEphemeral(ctx, req)
	}
	id := req.GetVolumeId()
	target, t, err := s.d.checkMountRequest(id, "target path", req.GetTargetPath(), req.GetVolumeCapability())
	if err != nil {
		return nil, err
	}
	if req.GetStagingTargetPath() == "" {
		return nil, status.Error(codes.FailedPrecondition, "staging target path is required: this driver stages volumes before publishing them")
	}
	stagingPath, err := s.d.nodePath("staging target path", req.GetStagingTargetPath())
	if err != nil {
		return nil, err
	}
	unlock, err := s.d.lock(ctx, id)
	if err != nil {
		return nil, err
	}
	defer unlock()
	vol, err := s.d.nodeVolume(id, t)
	if err != nil {
		return nil, err
	}
	want := publication{
		Node:     s.node,
		ReadOnly: req.GetReadonly() || isReadOnlyMode(req.GetVolumeCapability()),
		Mode:     req.GetVolumeCapability().GetAccessMode().GetMode().String(),
		RealPath: target.real,
	}
	recorded, err := s.d.checkPublication(vol, stagingPath, target, want)
	if err != nil {
		return nil, err
	}
	if !recorded {
		if err := s.d.setPublication(id, target.given, &want); err != nil {
			return nil, err
		}
	}
	// Publishing a recorded publication again redoes a mount a reboot undid.
	err = s.d.publish(vol, stagingPath.real, target.real, want.ReadOnly, req.GetVolumeCapability().GetMount().GetMountFlags())
	if err != nil {
		if !recorded {
			_ = s.d.setPublication(id, target.given, nil) // nothing was mounted; if this fails, unpublishing cleans up
		}
		return nil, err
	}
	return &csi.NodePublishVolumeResponse{}, nil
}

// checkPublication decides whether publishing vol on want.Node at target is
// refused, and whether it is recorded already (a repeated call).
func (d *Driver) checkPublication(vol *volume, stagingPath, target nodePath, want publication) (recorded bool, err error) {
	switch s := vol.staging(want.Node); {
	case s == nil || s.Path != stagingPath.given:
		return false, status.Errorf(codes.FailedPrecondition, "volume %s is not staged at %s", vol.ID, stagingPath.given)
	case s.realPath() != stagingPath.real:
		return false, status.Errorf(codes.FailedPrecondition, "volume %s was staged at %s, which resolved to %s and now resolves to %s",
			vol.ID, s.Path, s.realPath(), stagingPath.real)
	}
	if p, ok := vol.Publications[target.given]; ok {
		switch {
		case p.Node != want.Node:
			return false, status.Errorf(codes.FailedPrecondition, "target path %s is in use: volume %s is published there for node %s", target.given, vol.ID, p.Node)
		case p.ReadOnly != want.ReadOnly || p.Mode != want.Mode:
			return false, status.Errorf(codes.AlreadyExists, "volume %s is published at %s with readonly=%t and mode %s", vol.ID, target.given, p.ReadOnly, p.Mode)
		case p.realPath(target.given) != target.real:
			return false, status.Errorf(codes.FailedPrecondition, "volume %s was published at %s, which resolved to %s and now resolves to %s",
				vol.ID, target.given, p.realPath(target.given), target.real)
		}
		return true, nil
	}
	single := csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER.String()
	for path, p := range vol.Publications {
		if p.Mode == single || want.Mode == single {
			return false, status.Errorf(codes.FailedPrecondition, "volume %s is published at %s and a %s volume allows one publication", vol.ID, path, single)
		}
	}
	if who := otherClaim(d.store.current(), target.real, claimRef{volumeID: vol.ID, target: target.given}); who != "" {
		return false, status.Errorf(codes.FailedPrecondition, "target path %s is in use: %s", target.given, who)
	}
	return false, nil
}

// setPublication records (or, with nil, forgets) the publication of volume
// id at target.
func (d *Driver) setPublication(id, target string, p *publication) error {
	err := d.store.update(func(st *state) error {
		put(&st.editVolume(id).Publications, target, p)
		return nil
	})
	if err != nil {
		return status.Errorf(codes.Internal, "record the publication of volume %s at %s: %v", id, target, err)
	}
	return nil
}

// publish mounts vol onto target; both paths are resolved.
func (d *Driver) publish(vol *volume, stagingPath, target string, readOnly bool, flags []string) error {
	source := stagingPath
	if vol.AccessType == accessBlock {
		data, err := d.disk.volumePath(vol.ID, vol.AccessType)
		if err != nil {
			return status.Errorf(codes.Internal, "volume path: %v", err)
		}
		// Asked again rather than taken from the state: after a reboot the
		// device recorded at staging may be gone or belong to another file.
		if source, err = d.attachLoop(vol.ID, data); err != nil {
			return err
		}
		if err := ensureFile(target); err != nil {
			return status.Errorf(codes.Internal, "publish volume %s: %v", vol.ID, err)
		}
	} else if err := ensureDir(target); err != nil {
		return status.Errorf(codes.Internal, "publish volume %s: %v", vol.ID, err)
	}
	if err := d.bindOnce(source, target, readOnly, flags); err != nil {
		return status.Errorf(codes.Internal, "publish volume %s: %v", vol.ID, err)
	}
	return nil
}

// NodeUnpublishVolume unmounts the target and removes the file or directory
// there. It acts only on a publication the state records at this target,
// and only while the target still resolves where it was mounted: a path the
// driver did not publish is left untouched, with OK as the spec asks of a
// volume not published there.
func (s *nodeServer) NodeUnpublishVolume(ctx context.Context, req *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	id := req.GetVolumeId()
	if err := checkName("volume ID", id); err != nil {
		return nil, err
	}
	target, err := checkNodePath("target path", req.GetTargetPath(), s.d.cfg.DataDir)
	if err != nil {
		return nil, err
	}
	unlock, err := s.d.lock(ctx, id)
	if err != nil {
		return nil, err
	}
	defer unlock()
	if e := s.d.store.current().Ephemeral.Get(id); e != nil {
		return s.unpublishEphemeral(e, target)
	}
	vol := s.d.store.current().Volumes.Get(id)
	if vol == nil {
		return nil, status.Errorf(codes.NotFound, "volume %q does not exist", id)
	}
	p, recorded := vol.Publications[target]
	if !recorded || p.Node != s.node {
		return &csi.NodeUnpublishVolumeResponse{}, nil
	}
	real, err := recordedPath("target path", target, p.realPath(target))
	if err != nil {
		return nil, err
	}
	if err := s.d.unmountIfMounted(real); err != nil {
		return nil, status.Errorf(codes.Internal, "unpublish volume %s: %v", id, err)
	}
	// os.Remove, never RemoveAll: if the unmount did not happen, the volume's
	// data is behind target and must not be deleted.
	if err := os.Remove(real); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, status.Errorf(codes.Internal, "unpublish volume %s: %v", id, err)
	}
	if err := s.d.setPublication(id, target, nil); err != nil {
		return nil, err
	}
	return &csi.NodeUnpublishVolumeResponse{}, nil
}
