package hostpath

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

type nodeServer struct {
	csi.UnimplementedNodeServer
	d *Driver
}

// NodeStageVolume makes a volume ready on this node: a mount volume's
// directory is bind-mounted onto the staging path, a block volume's file is
// attached to a loop device.
func (s *nodeServer) NodeStageVolume(ctx context.Context, req *csi.NodeStageVolumeRequest) (*csi.NodeStageVolumeResponse, error) {
	id := req.GetVolumeId()
	if err := checkName("volume ID", id); err != nil {
		return nil, err
	}
	path, err := checkNodePath("staging target path", req.GetStagingTargetPath(), s.d.cfg.DataDir)
	if err != nil {
		return nil, err
	}
	t, err := checkCapability(req.GetVolumeCapability())
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
	if _, ok := vol.Attachments[s.d.cfg.NodeID]; s.d.cfg.AttachRequired && !ok {
		return nil, status.Errorf(codes.FailedPrecondition, "volume %s is not attached to node %s; ControllerPublishVolume comes first", id, s.d.cfg.NodeID)
	}
	if vol.Staging != nil && vol.Staging.Path != path {
		return nil, status.Errorf(codes.FailedPrecondition, "volume %s is staged at %s already", id, vol.Staging.Path)
	}
	// Staging a recorded volume again is not skipped: after a reboot the
	// record is there but the mount or loop device is not, and this redoes it.
	device, err := s.d.stage(vol, path)
	if err != nil {
		return nil, err
	}
	want := &staging{Path: path, Device: device}
	if vol.Staging != nil && *vol.Staging == *want {
		return &csi.NodeStageVolumeResponse{}, nil
	}
	err = s.d.store.update(func(st *state) error {
		st.Volumes[id].Staging = want
		return nil
	})
	if err != nil {
		if vol.Staging == nil {
			_ = s.d.unstage(s.d.store.current(), vol, path)
		}
		return nil, status.Errorf(codes.Internal, "stage volume %s: %v", id, err)
	}
	return &csi.NodeStageVolumeResponse{}, nil
}

// nodeVolume finds a volume for a node call asking for access type t.
func (d *Driver) nodeVolume(id string, t accessType) (*volume, error) {
	vol := d.store.current().Volumes[id]
	switch {
	case vol == nil:
		return nil, status.Errorf(codes.NotFound, "volume %q does not exist", id)
	case t != vol.AccessType:
		return nil, status.Errorf(codes.FailedPrecondition, "volume %s is a %s volume", id, vol.AccessType)
	}
	return vol, nil
}

func (d *Driver) stage(vol *volume, path string) (device string, err error) {
	data, err := d.disk.volumePath(vol.ID, vol.AccessType)
	if err != nil {
		return "", status.Errorf(codes.Internal, "volume path: %v", err)
	}
	if vol.AccessType == accessBlock {
		return d.attachLoop(vol.ID, data)
	}
	if err := ensureDir(path); err != nil {
		return "", status.Errorf(codes.Internal, "stage volume %s: %v", vol.ID, err)
	}
	if err := d.bindOnce(data, path, false, nil); err != nil {
		return "", status.Errorf(codes.Internal, "stage volume %s: %v", vol.ID, err)
	}
	return "", nil
}

func (d *Driver) attachLoop(id, file string) (string, error) {
	dev, err := d.cfg.Mounter.AttachLoop(file)
	switch {
	case errors.Is(err, ErrLoopUnavailable):
		return "", status.Errorf(codes.FailedPrecondition, "block volume %s needs a loop device: %v", id, err)
	case err != nil:
		return "", status.Errorf(codes.Internal, "block volume %s: %v", id, err)
	}
	return dev, nil
}

// bindOnce bind-mounts source onto target unless target is a mount point
// already: a mount the driver made before dying without recording it.
// Callers make sure no other volume claims target.
func (d *Driver) bindOnce(source, target string, readOnly bool, options []string) error {
	mounted, err := d.cfg.Mounter.IsMountPoint(target)
	if err != nil || mounted {
		return err
	}
	return d.cfg.Mounter.BindMount(source, target, readOnly, options)
}

// NodeUnstageVolume undoes NodeStageVolume. It also cleans up a staging the
// driver made but did not record before dying, unless another volume
// claims the path.
func (s *nodeServer) NodeUnstageVolume(ctx context.Context, req *csi.NodeUnstageVolumeRequest) (*csi.NodeUnstageVolumeResponse, error) {
	id := req.GetVolumeId()
	if err := checkName("volume ID", id); err != nil {
		return nil, err
	}
	path, err := checkNodePath("staging target path", req.GetStagingTargetPath(), s.d.cfg.DataDir)
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
	switch {
	case vol == nil:
		return nil, status.Errorf(codes.NotFound, "volume %q does not exist", id)
	case vol.Staging != nil && vol.Staging.Path != path:
		return &csi.NodeUnstageVolumeResponse{}, nil // staged elsewhere, not here
	case len(vol.Publications) > 0:
		return nil, status.Errorf(codes.FailedPrecondition, "volume %s is still published; unpublish it first", id)
	}
	if err := s.d.unstage(st, vol, path); err != nil {
		return nil, status.Errorf(codes.Internal, "unstage volume %s: %v", id, err)
	}
	if vol.Staging == nil {
		return &csi.NodeUnstageVolumeResponse{}, nil
	}
	err = s.d.store.update(func(st *state) error {
		st.Volumes[id].Staging = nil
		return nil
	})
	if err != nil {
		return nil, status.Errorf(codes.Internal, "unstage volume %s: %v", id, err)
	}
	return &csi.NodeUnstageVolumeResponse{}, nil
}

func (d *Driver) unstage(st *state, vol *volume, path string) error {
	if vol.AccessType == accessBlock {
		data, err := d.disk.volumePath(vol.ID, vol.AccessType)
		if err != nil {
			return err
		}
		return d.cfg.Mounter.DetachLoop(data)
	}
	if claimedByOther(st, vol.ID, path) {
		return nil
	}
	return d.unmountIfMounted(path)
}

// claimedByOther reports whether a volume other than id is staged or
// published at path.
func claimedByOther(st *state, id, path string) bool {
	for _, v := range st.Volumes {
		if v.ID == id {
			continue
		}
		if _, ok := v.Publications[path]; ok || (v.Staging != nil && v.Staging.Path == path) {
			return true
		}
	}
	return false
}

func (d *Driver) unmountIfMounted(path string) error {
	mounted, err := d.cfg.Mounter.IsMountPoint(path)
	if err != nil || !mounted {
		return err
	}
	return d.cfg.Mounter.Unmount(path)
}

// ensureDir creates the directory path (its parent must exist) unless it is
// there already.
func ensureDir(path string) error {
	err := os.Mkdir(path, 0o750)
	if err == nil || !errors.Is(err, fs.ErrExist) {
		return err
	}
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s exists and is not a directory", path)
	}
	return nil
}

// ensureFile creates the empty file path, which a block volume's device is
// bound onto; an existing file is reused, a directory is an error.
func ensureFile(path string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY, 0o640)
	if err != nil {
		return err
	}
	return f.Close()
}
