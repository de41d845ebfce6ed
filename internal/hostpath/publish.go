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
// (onto a file the driver creates).
func (s *nodeServer) NodePublishVolume(ctx context.Context, req *csi.NodePublishVolumeRequest) (*csi.NodePublishVolumeResponse, error) {
	id := req.GetVolumeId()
	if err := checkName("volume ID", id); err != nil {
		return nil, err
	}
	target, err := checkNodePath("target path", req.GetTargetPath(), s.d.cfg.DataDir)
	if err != nil {
		return nil, err
	}
	t, err := checkCapability(req.GetVolumeCapability())
	if err != nil {
		return nil, err
	}
	if req.GetStagingTargetPath() == "" {
		return nil, status.Error(codes.FailedPrecondition, "staging target path is required: this driver stages volumes before publishing them")
	}
	stagingPath, err := checkNodePath("staging target path", req.GetStagingTargetPath(), s.d.cfg.DataDir)
	if err != nil {
		return nil, err
	}
	unlock, err := s.d.locks.lock(ctx, id)
	if err != nil {
		return nil, err
	}
	defer unlock()
	vol, err := s.d.nodeVolume(id, t)
	if err != nil {
		return nil, err
	}
	want := publication{
		ReadOnly: req.GetReadonly() || isReadOnlyMode(req.GetVolumeCapability()),
		Mode:     req.GetVolumeCapability().GetAccessMode().GetMode().String(),
	}
	recorded, err := s.d.checkPublication(vol, stagingPath, target, want)
	if err != nil {
		return nil, err
	}
	// Publishing a recorded publication again redoes a mount a reboot undid.
	if err := s.d.publish(vol, stagingPath, target, want.ReadOnly, req.GetVolumeCapability().GetMount().GetMountFlags()); err != nil {
		return nil, err
	}
	if recorded {
		return &csi.NodePublishVolumeResponse{}, nil
	}
	err = s.d.store.update(func(st *state) error {
		v := st.Volumes[id]
		if v.Publications == nil {
			v.Publications = map[string]publication{}
		}
		v.Publications[target] = want
		return nil
	})
	if err != nil {
		_ = s.d.unmountIfMounted(target)
		return nil, status.Errorf(codes.Internal, "publish volume %s: %v", id, err)
	}
	return &csi.NodePublishVolumeResponse{}, nil
}

// checkPublication decides whether publishing vol at target is refused, and
// whether it is recorded already (a repeated call).
func (d *Driver) checkPublication(vol *volume, stagingPath, target string, want publication) (recorded bool, err error) {
	if vol.Staging == nil || vol.Staging.Path != stagingPath {
		return false, status.Errorf(codes.FailedPrecondition, "volume %s is not staged at %s", vol.ID, stagingPath)
	}
	if p, ok := vol.Publications[target]; ok {
		if p != want {
			return false, status.Errorf(codes.AlreadyExists, "volume %s is published at %s with readonly=%t and mode %s", vol.ID, target, p.ReadOnly, p.Mode)
		}
		return true, nil
	}
	single := csi.VolumeCapability_AccessMode_SINGLE_NODE_SINGLE_WRITER.String()
	for path, p := range vol.Publications {
		if p.Mode == single || want.Mode == single {
			return false, status.Errorf(codes.FailedPrecondition, "volume %s is published at %s and a %s volume allows one publication", vol.ID, path, single)
		}
	}
	if claimedByOther(d.store.current(), vol.ID, target) {
		return false, status.Errorf(codes.FailedPrecondition, "target path %s is in use by another volume", target)
	}
	return false, nil
}

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
// the driver created there. A target the state does not record is cleaned
// up too (the driver may have died before recording it), unless another
// volume claims it.
func (s *nodeServer) NodeUnpublishVolume(ctx context.Context, req *csi.NodeUnpublishVolumeRequest) (*csi.NodeUnpublishVolumeResponse, error) {
	id := req.GetVolumeId()
	if err := checkName("volume ID", id); err != nil {
		return nil, err
	}
	target, err := checkNodePath("target path", req.GetTargetPath(), s.d.cfg.DataDir)
	if err != nil {
		return nil, err
	}
	unlock, err := s.d.locks.lock(ctx, id)
	if err != nil {
		return nil, err
	}
	defer unlock()
	st := s.d.store.current()
	vol := st.Volumes[id]
	if vol == nil {
		return nil, status.Errorf(codes.NotFound, "volume %q does not exist", id)
	}
	_, recorded := vol.Publications[target]
	if !recorded && claimedByOther(st, id, target) {
		return &csi.NodeUnpublishVolumeResponse{}, nil
	}
	if err := s.d.unmountIfMounted(target); err != nil {
		return nil, status.Errorf(codes.Internal, "unpublish volume %s: %v", id, err)
	}
	// os.Remove, never RemoveAll: if the unmount did not happen, the volume's
	// data is behind target and must not be deleted.
	if err := os.Remove(target); err != nil && !errors.Is(err, fs.ErrNotExist) && recorded {
		return nil, status.Errorf(codes.Internal, "unpublish volume %s: %v", id, err)
	}
	if !recorded {
		return &csi.NodeUnpublishVolumeResponse{}, nil
	}
	err = s.d.store.update(func(st *state) error {
		delete(st.Volumes[id].Publications, target)
		return nil
	})
	if err != nil {
		return nil, status.Errorf(codes.Internal, "unpublish volume %s: %v", id, err)
	}
	return &csi.NodeUnpublishVolumeResponse{}, nil
}
