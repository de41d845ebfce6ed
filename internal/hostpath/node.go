package hostpath

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// nodeServer is the node service of one node: every call acts for node.
type nodeServer struct {
	csi.UnimplementedNodeServer
	d    *Driver
	node string
}

// NodeStageVolume makes a volume ready on this node: a mount volume's
// directory is bind-mounted onto the staging path, a block volume's file is
// attached to a loop device. The staging is recorded before anything is
// done, so that NodeUnstageVolume can undo it even if the driver dies half
// way.
func (s *nodeServer) NodeStageVolume(ctx context.Context, req *csi.NodeStageVolumeRequest) (*csi.NodeStageVolumeResponse, error) {
	id := req.GetVolumeId()
	path, t, err := s.d.checkMountRequest(id, "staging target path", req.GetStagingTargetPath(), req.GetVolumeCapability())
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
	recorded, err := s.d.checkStaging(vol, s.node, path)
	if err != nil {
		return nil, err
	}
	if !recorded {
		if err := s.d.setStaging(id, s.node, &staging{Path: path.given, RealPath: path.real}); err != nil {
			return nil, err
		}
	}
	// Staging a recorded volume again is not skipped: after a reboot the
	// record is there but the mount or loop device is not, and this redoes it.
	device, err := s.d.stage(vol, path.real)
	if err != nil {
		if !recorded {
			_ = s.d.setStaging(id, s.node, nil) // nothing was staged; if this fails, unstaging cleans up
		}
		return nil, err
	}
	if want := (staging{Path: path.given, RealPath: path.real, Device: device}); want.Device != "" &&
		(vol.staging(s.node) == nil || *vol.staging(s.node) != want) {
		if err := s.d.setStaging(id, s.node, &want); err != nil {
			return nil, err
		}
	}
	return &csi.NodeStageVolumeResponse{}, nil
}

// checkStaging decides whether staging vol on node at path is refused, and
// whether it is recorded already (a repeated call).
func (d *Driver) checkStaging(vol *volume, node string, path nodePath) (recorded bool, err error) {
	if _, ok := vol.Attachments[node]; d.cfg.AttachRequired && !ok {
		return false, status.Errorf(codes.FailedPrecondition, "volume %s is not attached to node %s; ControllerPublishVolume comes first", vol.ID, node)
	}
	if s := vol.staging(node); s != nil {
		switch {
		case s.Path != path.given:
			return false, status.Errorf(codes.FailedPrecondition, "volume %s is staged at %s already", vol.ID, s.Path)
		case s.realPath() != path.real:
			return false, status.Errorf(codes.FailedPrecondition, "volume %s was staged at %s, which resolved to %s and now resolves to %s",
				vol.ID, s.Path, s.realPath(), path.real)
		}
		return true, nil
	}
	if who := otherClaim(d.store.current(), path.real, claimRef{volumeID: vol.ID, node: node}); who != "" {
		return false, status.Errorf(codes.FailedPrecondition, "staging target path %s is in use: %s", path.given, who)
	}
	return false, nil
}

// setStaging records (or, with nil, forgets) the staging of volume id on
// node. A network volume staged on a node for the first time also records
// the size the node meets it at (volume.NodeSizes).
func (d *Driver) setStaging(id, node string, s *staging) error {
	err := d.store.update(func(st *state) error {
		v := st.editVolume(id)
		put(&v.Stagings, node, s)
		if _, known := v.NodeSizes[node]; s != nil && d.cfg.Network && !known {
			put(&v.NodeSizes, node, &v.CapacityBytes)
		}
		return nil
	})
	if err != nil {
		return status.Errorf(codes.Internal, "record the staging of volume %s on node %s: %v", id, node, err)
	}
	return nil
}

// nodeVolume finds a volume for a node call asking for access type t.
func (d *Driver) nodeVolume(id string, t accessType) (*volume, error) {
	vol := d.store.current().Volumes.Get(id)
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

// NodeUnstageVolume undoes NodeStageVolume. It acts only on a staging the
// state records at this path: anything else is not the driver's to unmount,
// and the spec asks for OK when the volume is not staged there.
func (s *nodeServer) NodeUnstageVolume(ctx context.Context, req *csi.NodeUnstageVolumeRequest) (*csi.NodeUnstageVolumeResponse, error) {
	id := req.GetVolumeId()
	if err := checkName("volume ID", id); err != nil {
		return nil, err
	}
	given, err := checkNodePath("staging target path", req.GetStagingTargetPath(), s.d.cfg.DataDir)
	if err != nil {
		return nil, err
	}
	vol, unlock, err := s.d.lockedVolume(ctx, id)
	if err != nil {
		return nil, err
	}
	defer unlock()
	staged := vol.staging(s.node)
	switch {
	case staged == nil || staged.Path != given:
		return &csi.NodeUnstageVolumeResponse{}, nil // not staged here: nothing to undo
	case vol.publishedOn(s.node):
		return nil, status.Errorf(codes.FailedPrecondition, "volume %s is still published; unpublish it first", id)
	}
	real, err := recordedPath("staging target path", given, staged.realPath())
	if err != nil {
		return nil, err
	}
	if err := s.d.unstage(vol, real); err != nil {
		return nil, status.Errorf(codes.Internal, "unstage volume %s: %v", id, err)
	}
	if err := s.d.setStaging(id, s.node, nil); err != nil {
		return nil, err
	}
	return &csi.NodeUnstageVolumeResponse{}, nil
}

// unstage undoes stage; real is the recorded staging path, resolved.
func (d *Driver) unstage(vol *volume, real string) error {
	if vol.AccessType == accessBlock {
		data, err := d.disk.volumePath(vol.ID, vol.AccessType)
		if err != nil {
			return err
		}
		return d.cfg.Mounter.DetachLoop(data)
	}
	return d.unmountIfMounted(real)
}

func (d *Driver) unmountIfMounted(path string) error {
	mounted, err := d.cfg.Mounter.IsMountPoint(path)
	if err != nil || !mounted {
		return err
	}
	return d.cfg.Mounter.Unmount(path)
}

// ensureDir creates the directory path (its parent must exist) unless it is
// there already. A symlink there is refused, not followed: it may have been
// planted after the path was resolved.
func ensureDir(path string) error {
	err := os.Mkdir(path, 0o750)
	if err == nil || !errors.Is(err, fs.ErrExist) {
		return err
	}
	fi, err := os.Lstat(path)
	if err != nil {
		return err
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s exists and is not a directory", path)
	}
	return nil
}

// ensureFile creates the empty file path, which a block volume's device is
// bound onto; an existing file is reused, a directory or a symlink is an
// error.
func ensureFile(path string) error {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|syscall.O_NOFOLLOW, 0o640)
	if err != nil {
		return err
	}
	return f.Close()
}
