package hostpath

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// pausedGroup makes the next group snapshot stop after it copied its first
// member, until release is called; paused is closed when it stops there.
type pausedGroup struct {
	paused, resume chan struct{}
	once           sync.Once
	onPause        func()
}

func pauseGroups(cfg *Config) *pausedGroup {
	p := &pausedGroup{paused: make(chan struct{}), resume: make(chan struct{})}
	cfg.memberCopied = func(string) {
		first := false
		p.once.Do(func() { first = true })
		if !first {
			return
		}
		if p.onPause != nil {
			p.onPause()
		}
		close(p.paused)
		<-p.resume
	}
	return p
}

func (p *pausedGroup) release() { close(p.resume) }

// blockedCallTimeout is how long a call that must wait for the group is
// given before the test takes it as blocked: the call, waiting on the
// group's lock, ends with its deadline.
const blockedCallTimeout = 200 * time.Millisecond

func wantBlocked(t *testing.T, what string, call func(ctx context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), blockedCallTimeout)
	defer cancel()
	if err := call(ctx); err == nil || (status.Code(err) != codes.DeadlineExceeded && status.Code(err) != codes.Aborted) {
		t.Errorf("%s while the group was being taken: %v; want it to wait for the group", what, err)
	}
}

// The group promise: every member is taken under one driver lock, so no
// call that changes a member volume through the driver (expansion, which
// grows a block volume's file; deletion; staging and publishing, which let
// a pod write; deleting a member) runs between the first copy and the
// last, and none of the group is visible before all of it is recorded.
func TestGroupSnapshotTakesEveryMemberUnderOneLock(t *testing.T) {
	for _, network := range []bool{false, true} {
		name := "node-local"
		if network {
			name = "network"
		}
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			dir := shortTempDir(t)
			cfg := testConfig(dir, NewFakeMounter())
			if network {
				cfg = testNetworkConfig(dir, NewFakeMounter(), testNode)
			}
			pause := pauseGroups(&cfg)
			r := startDriver(t, cfg)
			var vols []string
			for _, n := range []string{"a", "b"} {
				req := createReq(n)
				req.VolumeCapabilities = []*csi.VolumeCapability{blockCap()}
				vols = append(vols, must[*csi.CreateVolumeResponse](t)(r.controller.CreateVolume(ctx, req)).Volume.VolumeId)
			}
			for _, v := range vols {
				must[*csi.ControllerPublishVolumeResponse](t)(r.controller.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{
					VolumeId: v, NodeId: testNode, VolumeCapability: blockCap()}))
			}
			for _, v := range vols {
				if err := os.Mkdir(filepath.Join(dir, "staging-"+v), 0o750); err != nil {
					t.Fatal(err)
				}
			}

			created := make(chan error, 1)
			var group *csi.VolumeGroupSnapshot
			go func() {
				resp, err := r.group.CreateVolumeGroupSnapshot(ctx, &csi.CreateVolumeGroupSnapshotRequest{Name: "g", SourceVolumeIds: vols})
				group = resp.GetGroupSnapshot()
				created <- err
			}()
			<-pause.paused
			for _, v := range vols {
				wantBlocked(t, "expanding "+v, func(ctx context.Context) error {
					_, err := r.controller.ControllerExpandVolume(ctx, &csi.ControllerExpandVolumeRequest{
						VolumeId: v, CapacityRange: &csi.CapacityRange{RequiredBytes: 2 << 30}})
					return err
				})
				wantBlocked(t, "staging "+v, func(ctx context.Context) error {
					_, err := r.node.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{
						VolumeId: v, StagingTargetPath: filepath.Join(dir, "staging-"+v), VolumeCapability: blockCap()})
					return err
				})
				wantBlocked(t, "modifying "+v, func(ctx context.Context) error {
					_, err := r.controller.ControllerModifyVolume(ctx, &csi.ControllerModifyVolumeRequest{
						VolumeId: v, MutableParameters: map[string]string{ParamIOPS: "10"}})
					return err
				})
				wantBlocked(t, "deleting "+v, func(ctx context.Context) error {
					_, err := r.controller.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: v})
					return err
				})
				wantBlocked(t, "snapshotting "+v, func(ctx context.Context) error {
					_, err := r.controller.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "alone-" + v, SourceVolumeId: v})
					return err
				})
				wantBlocked(t, "detaching "+v, func(ctx context.Context) error {
					_, err := r.controller.ControllerUnpublishVolume(ctx, &csi.ControllerUnpublishVolumeRequest{VolumeId: v, NodeId: testNode})
					return err
				})
			}
			wantBlocked(t, "deleting the group", func(ctx context.Context) error {
				_, err := r.group.DeleteVolumeGroupSnapshot(ctx, &csi.DeleteVolumeGroupSnapshotRequest{GroupSnapshotId: groupSnapshotIDFor("g")})
				return err
			})
			if list := must[*csi.ListSnapshotsResponse](t)(r.controller.ListSnapshots(ctx, &csi.ListSnapshotsRequest{})); len(list.Entries) != 0 {
				t.Errorf("half way through the group, ListSnapshots = %v; want nothing of the group yet", list.Entries)
			}
			_, err := r.group.GetVolumeGroupSnapshot(ctx, &csi.GetVolumeGroupSnapshotRequest{GroupSnapshotId: groupSnapshotIDFor("g")})
			wantCode(t, err, codes.NotFound)
			pause.release()
			if err := <-created; err != nil {
				t.Fatal(err)
			}
			for _, s := range group.Snapshots {
				if s.SizeBytes != 1<<30 {
					t.Errorf("member %s of %s has %d bytes; want the size before any expansion", s.SnapshotId, s.SourceVolumeId, s.SizeBytes)
				}
				fi, err := os.Stat(filepath.Join(cfg.DataDir, "snapshots", s.SnapshotId+blockSuffix))
				if err != nil || fi.Size() != 1<<30 {
					t.Errorf("member %s data: %v, %v; want the 1 GiB file from before any expansion", s.SnapshotId, fi, err)
				}
			}
			// Once the group is taken, the calls go through.
			resp := must[*csi.ControllerExpandVolumeResponse](t)(r.controller.ControllerExpandVolume(ctx, &csi.ControllerExpandVolumeRequest{
				VolumeId: vols[1], CapacityRange: &csi.CapacityRange{RequiredBytes: 2 << 30}}))
			if resp.CapacityBytes != 2<<30 {
				t.Errorf("expansion after the group = %v", resp)
			}
		})
	}
}
