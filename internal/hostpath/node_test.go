package hostpath

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// nodeFixture is a running driver with one attached volume and the paths
// the CO would give for it.
type nodeFixture struct {
	r               *runningDriver
	mounter         *FakeMounter
	vol             *csi.Volume
	staging, target string
}

func newNodeFixture(t *testing.T, mounter *FakeMounter, c *csi.VolumeCapability) *nodeFixture {
	t.Helper()
	ctx := context.Background()
	dir := shortTempDir(t)
	r := startDriver(t, testConfig(dir, mounter))
	req := createReq("vol")
	req.VolumeCapabilities = []*csi.VolumeCapability{c}
	vol := must[*csi.CreateVolumeResponse](t)(r.controller.CreateVolume(ctx, req)).Volume
	must[*csi.ControllerPublishVolumeResponse](t)(r.controller.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{
		VolumeId: vol.VolumeId, NodeId: testNode, VolumeCapability: c,
	}))
	f := &nodeFixture{r: r, mounter: mounter, vol: vol, staging: filepath.Join(dir, "staging"), target: filepath.Join(dir, "target")}
	if err := os.Mkdir(f.staging, 0o750); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *nodeFixture) stage(c *csi.VolumeCapability) error {
	_, err := f.r.node.NodeStageVolume(context.Background(), &csi.NodeStageVolumeRequest{
		VolumeId: f.vol.VolumeId, StagingTargetPath: f.staging, VolumeCapability: c,
	})
	return err
}

func (f *nodeFixture) publish(c *csi.VolumeCapability, readOnly bool) error {
	_, err := f.r.node.NodePublishVolume(context.Background(), &csi.NodePublishVolumeRequest{
		VolumeId: f.vol.VolumeId, StagingTargetPath: f.staging, TargetPath: f.target, VolumeCapability: c, Readonly: readOnly,
	})
	return err
}

func (f *nodeFixture) unpublish(id string) error {
	_, err := f.r.node.NodeUnpublishVolume(context.Background(), &csi.NodeUnpublishVolumeRequest{VolumeId: id, TargetPath: f.target})
	return err
}

func TestBlockVolumeNeedsLoopDevices(t *testing.T) {
	mounter := NewFakeMounter()
	mounter.LoopDevicesUnavailable = true
	f := newNodeFixture(t, mounter, blockCap())
	err := f.stage(blockCap())
	wantCode(t, err, codes.FailedPrecondition)
	if msg := status.Convert(err).Message(); !strings.Contains(msg, "loop devices are unavailable") {
		t.Errorf("error %q does not say loop devices are unavailable", msg)
	}
}

func TestBlockVolumeIsPublishedThroughItsLoopDevice(t *testing.T) {
	f := newNodeFixture(t, NewFakeMounter(), blockCap())
	if err := f.stage(blockCap()); err != nil {
		t.Fatal(err)
	}
	if err := f.publish(blockCap(), true); err != nil {
		t.Fatal(err)
	}
	devices := f.mounter.LoopDevices()
	if len(devices) != 1 {
		t.Fatalf("loop devices: %v, want one", devices)
	}
	var device string
	for _, dev := range devices {
		device = dev
	}
	if m := f.mounter.Mounts()[f.target]; m.Source != device || !m.ReadOnly {
		t.Errorf("target mount = %+v, want a read-only bind of %s", m, device)
	}
	if fi, err := os.Stat(f.target); err != nil || !fi.Mode().IsRegular() {
		t.Errorf("target: %v, %v; want the file the device is bound onto", fi, err)
	}

	if err := f.unpublish(f.vol.VolumeId); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(f.target); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("target survived unpublishing: %v", err)
	}
	if _, err := f.r.node.NodeUnstageVolume(context.Background(), &csi.NodeUnstageVolumeRequest{
		VolumeId: f.vol.VolumeId, StagingTargetPath: f.staging,
	}); err != nil {
		t.Fatal(err)
	}
	if len(f.mounter.LoopDevices()) != 0 || len(f.mounter.Mounts()) != 0 {
		t.Errorf("after unstaging: loop devices %v, mounts %v; want none", f.mounter.LoopDevices(), f.mounter.Mounts())
	}
}

func TestStagingNeedsAttachment(t *testing.T) {
	f := newNodeFixture(t, NewFakeMounter(), mountCap())
	must[*csi.ControllerUnpublishVolumeResponse](t)(f.r.controller.ControllerUnpublishVolume(context.Background(),
		&csi.ControllerUnpublishVolumeRequest{VolumeId: f.vol.VolumeId, NodeId: testNode}))
	wantCode(t, f.stage(mountCap()), codes.FailedPrecondition)
}

func TestPublishingNeedsStaging(t *testing.T) {
	f := newNodeFixture(t, NewFakeMounter(), mountCap())
	wantCode(t, f.publish(mountCap(), false), codes.FailedPrecondition)
	if err := f.stage(mountCap()); err != nil {
		t.Fatal(err)
	}
	wantCode(t, f.publish(blockCap(), false), codes.FailedPrecondition)
	if err := f.publish(mountCap(), false); err != nil {
		t.Fatal(err)
	}
	wantCode(t, f.publish(mountCap(), true), codes.AlreadyExists)
	_, err := f.r.node.NodeUnstageVolume(context.Background(), &csi.NodeUnstageVolumeRequest{
		VolumeId: f.vol.VolumeId, StagingTargetPath: f.staging,
	})
	wantCode(t, err, codes.FailedPrecondition)
}

func TestReaderOnlyModePublishesReadOnly(t *testing.T) {
	c := mountCap()
	c.AccessMode.Mode = csi.VolumeCapability_AccessMode_SINGLE_NODE_READER_ONLY
	f := newNodeFixture(t, NewFakeMounter(), c)
	if err := f.stage(c); err != nil {
		t.Fatal(err)
	}
	if err := f.publish(c, false); err != nil {
		t.Fatal(err)
	}
	if m := f.mounter.Mounts()[f.target]; m.Source != f.staging || !m.ReadOnly {
		t.Errorf("target mount = %+v, want a read-only bind of the staging path", m)
	}
}

func TestNodeGetVolumeStats(t *testing.T) {
	f := newNodeFixture(t, NewFakeMounter(), mountCap())
	if err := f.stage(mountCap()); err != nil {
		t.Fatal(err)
	}
	if err := f.publish(mountCap(), false); err != nil {
		t.Fatal(err)
	}
	writeVolumeFile(t, f.r.cfg.DataDir, f.vol.VolumeId, "data", strings.Repeat("x", 64<<10))
	stats := func() *csi.NodeGetVolumeStatsResponse {
		return must[*csi.NodeGetVolumeStatsResponse](t)(f.r.node.NodeGetVolumeStats(context.Background(),
			&csi.NodeGetVolumeStatsRequest{VolumeId: f.vol.VolumeId, VolumePath: f.target}))
	}
	got := stats()
	if u := got.Usage[0]; u.Total != 1<<30 || u.Used < 64<<10 || u.Available != u.Total-u.Used {
		t.Errorf("usage = %v, want 1 GiB total with at least 64 KiB used", u)
	}
	if err := f.mounter.Unmount(f.target); err != nil {
		t.Fatal(err)
	}
	if u := stats().Usage[0]; u.Total != 1<<30 || u.Used != 0 || u.Available != 0 {
		t.Errorf("usage of an unmounted target = %v, want its size and no usage read", u)
	}
	_, err := f.r.node.NodeGetVolumeStats(context.Background(), &csi.NodeGetVolumeStatsRequest{VolumeId: f.vol.VolumeId, VolumePath: "/elsewhere"})
	wantCode(t, err, codes.NotFound)
}
