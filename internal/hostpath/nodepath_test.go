package hostpath

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
)

func (f *nodeFixture) dir() string { return filepath.Dir(f.staging) }

func (f *nodeFixture) stageAt(path string) error {
	_, err := f.r.node.NodeStageVolume(context.Background(), &csi.NodeStageVolumeRequest{
		VolumeId: f.vol.VolumeId, StagingTargetPath: path, VolumeCapability: mountCap(),
	})
	return err
}

func (f *nodeFixture) publishAt(staging, target string) error {
	_, err := f.r.node.NodePublishVolume(context.Background(), &csi.NodePublishVolumeRequest{
		VolumeId: f.vol.VolumeId, StagingTargetPath: staging, TargetPath: target, VolumeCapability: mountCap(),
	})
	return err
}

func (f *nodeFixture) unpublishAt(target string) error {
	_, err := f.r.node.NodeUnpublishVolume(context.Background(), &csi.NodeUnpublishVolumeRequest{VolumeId: f.vol.VolumeId, TargetPath: target})
	return err
}

func (f *nodeFixture) unstageAt(path string) error {
	_, err := f.r.node.NodeUnstageVolume(context.Background(), &csi.NodeUnstageVolumeRequest{VolumeId: f.vol.VolumeId, StagingTargetPath: path})
	return err
}

// someoneElsesMount makes a directory holding a file at path and mounts
// something onto it, as another program on the node would.
func someoneElsesMount(t *testing.T, f *nodeFixture, path string) {
	t.Helper()
	if err := os.MkdirAll(path, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(path, "theirs"), []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := f.mounter.BindMount(f.dir(), path, false, nil); err != nil {
		t.Fatal(err)
	}
}

func wantUntouched(t *testing.T, f *nodeFixture, path string) {
	t.Helper()
	if _, mounted := f.mounter.Mounts()[path]; !mounted {
		t.Errorf("%s was unmounted", path)
	}
	if data, err := os.ReadFile(filepath.Join(path, "theirs")); err != nil || string(data) != "keep" {
		t.Errorf("%s lost its content: %q, %v", path, data, err)
	}
}

func symlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// TestUnpublishLeavesAPathItNeverPublishedAlone: unpublishing or unstaging
// at a path the driver did not publish or stage there answers OK (the
// volume is not published there) and unmounts and removes nothing, even
// where something is mounted, and even for a path another volume uses.
func TestUnpublishLeavesAPathItNeverPublishedAlone(t *testing.T) {
	f := newNodeFixture(t, NewFakeMounter(), mountCap())
	someoneElsesMount(t, f, f.target)
	if err := f.unpublish(f.vol.VolumeId); err != nil {
		t.Fatalf("NodeUnpublishVolume at a path never published: %v, want OK", err)
	}
	wantUntouched(t, f, f.target)
	if err := f.unstageAt(f.target); err != nil {
		t.Fatalf("NodeUnstageVolume at a path never staged: %v, want OK", err)
	}
	wantUntouched(t, f, f.target)

	mine := filepath.Join(f.dir(), "mine")
	if err := f.stage(mountCap()); err != nil {
		t.Fatal(err)
	}
	if err := f.publishAt(f.staging, mine); err != nil {
		t.Fatal(err)
	}
	other := must[*csi.CreateVolumeResponse](t)(f.r.controller.CreateVolume(context.Background(), createReq("other"))).Volume
	if err := f.unpublish(other.VolumeId); err != nil {
		t.Fatal(err)
	}
	if _, err := f.r.node.NodeUnpublishVolume(context.Background(), &csi.NodeUnpublishVolumeRequest{VolumeId: other.VolumeId, TargetPath: mine}); err != nil {
		t.Fatal(err)
	}
	if _, mounted := f.mounter.Mounts()[mine]; !mounted {
		t.Error("unpublishing another volume unmounted this volume's target")
	}
	_, err := f.r.node.NodeUnpublishVolume(context.Background(), &csi.NodeUnpublishVolumeRequest{VolumeId: volumeIDFor("missing"), TargetPath: mine})
	wantCode(t, err, codes.NotFound)
}

// TestUnpublishThroughASymlinkTouchesNothingOutside plants symlinks at
// target paths: to a directory outside with something mounted on it, and to
// the volume's own published target. Unpublishing through them is OK and
// unmounts and removes nothing.
func TestUnpublishThroughASymlinkTouchesNothingOutside(t *testing.T) {
	f := newNodeFixture(t, NewFakeMounter(), mountCap())
	outside := filepath.Join(f.dir(), "outside")
	someoneElsesMount(t, f, outside)
	symlink(t, outside, f.target)
	if err := f.unpublish(f.vol.VolumeId); err != nil {
		t.Fatalf("NodeUnpublishVolume through a symlink: %v, want OK", err)
	}
	wantUntouched(t, f, outside)
	if err := f.unstageAt(f.target); err != nil {
		t.Fatalf("NodeUnstageVolume through a symlink: %v, want OK", err)
	}
	wantUntouched(t, f, outside)

	published := filepath.Join(f.dir(), "published")
	if err := f.stage(mountCap()); err != nil {
		t.Fatal(err)
	}
	if err := f.publishAt(f.staging, published); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(f.dir(), "link")
	symlink(t, published, link)
	if err := f.unpublishAt(link); err != nil {
		t.Fatal(err)
	}
	if _, mounted := f.mounter.Mounts()[published]; !mounted {
		t.Error("unpublishing a symlink to the published target unmounted it")
	}
}

// TestUnpublishWhenTheTargetNowResolvesElsewhereIsRefused: after a
// publication, the target's parent is swapped for a symlink to another
// directory with something mounted at the same name. Unpublishing refuses
// and touches nothing; once the parent is back, it works.
func TestUnpublishWhenTheTargetNowResolvesElsewhereIsRefused(t *testing.T) {
	f := newNodeFixture(t, NewFakeMounter(), mountCap())
	pods := filepath.Join(f.dir(), "pods")
	target := filepath.Join(pods, "target")
	if err := os.Mkdir(pods, 0o750); err != nil {
		t.Fatal(err)
	}
	if err := f.stage(mountCap()); err != nil {
		t.Fatal(err)
	}
	if err := f.publishAt(f.staging, target); err != nil {
		t.Fatal(err)
	}
	moveFile(t, pods, pods+".real")
	elsewhere := filepath.Join(f.dir(), "elsewhere")
	someoneElsesMount(t, f, filepath.Join(elsewhere, "target"))
	symlink(t, elsewhere, pods)

	wantCode(t, f.unpublishAt(target), codes.FailedPrecondition)
	wantUntouched(t, f, filepath.Join(elsewhere, "target"))

	if err := os.Remove(pods); err != nil {
		t.Fatal(err)
	}
	moveFile(t, pods+".real", pods)
	if err := f.unpublishAt(target); err != nil {
		t.Fatal(err)
	}
	if _, mounted := f.mounter.Mounts()[target]; mounted {
		t.Error("the target is still mounted after unpublishing")
	}
	if _, err := os.Lstat(target); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the target is still there after unpublishing: %v", err)
	}
}

// TestPublishOntoASymlinkIsRefused: a symlink at the target or staging path
// would send the mount elsewhere. Both are refused, nothing is mounted, and
// nothing is recorded.
func TestPublishOntoASymlinkIsRefused(t *testing.T) {
	f := newNodeFixture(t, NewFakeMounter(), mountCap())
	outside := filepath.Join(f.dir(), "outside")
	if err := os.Mkdir(outside, 0o750); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(f.dir(), "link")
	symlink(t, outside, link)
	wantCode(t, f.stageAt(link), codes.FailedPrecondition)
	if err := f.stage(mountCap()); err != nil {
		t.Fatal(err)
	}
	wantCode(t, f.publishAt(f.staging, link), codes.FailedPrecondition)
	if _, mounted := f.mounter.Mounts()[outside]; mounted {
		t.Error("the directory behind the symlink was mounted")
	}
	if vol := f.r.state(t).Volumes.Get(f.vol.VolumeId); len(vol.Publications) != 0 {
		t.Errorf("publications recorded: %v, want none", vol.Publications)
	}
}

// TestNodePathResolvingIntoTheDataDirIsRefused: a path that only a symlink
// takes into the data dir is refused like one that names it.
func TestNodePathResolvingIntoTheDataDirIsRefused(t *testing.T) {
	f := newNodeFixture(t, NewFakeMounter(), mountCap())
	link := filepath.Join(f.dir(), "into-data")
	symlink(t, filepath.Join(f.r.cfg.DataDir, "volumes"), link)
	wantCode(t, f.stageAt(filepath.Join(link, "staging")), codes.InvalidArgument)
	if err := f.stage(mountCap()); err != nil {
		t.Fatal(err)
	}
	wantCode(t, f.publishAt(f.staging, filepath.Join(link, "target")), codes.InvalidArgument)
	if len(f.mounter.Mounts()) != 1 {
		t.Errorf("mounts: %v, want only the staging", f.mounter.Mounts())
	}
}

// TestPublishUnderASymlinkedKubeletDirWorks: a node whose kubelet directory
// is a symlink (a common layout) stages, publishes, reports stats,
// unpublishes and unstages as usual, mounting at the resolved paths.
func TestPublishUnderASymlinkedKubeletDirWorks(t *testing.T) {
	f := newNodeFixture(t, NewFakeMounter(), mountCap())
	realDir := filepath.Join(f.dir(), "real-kubelet")
	if err := os.Mkdir(realDir, 0o750); err != nil {
		t.Fatal(err)
	}
	kubelet := filepath.Join(f.dir(), "kubelet")
	symlink(t, realDir, kubelet)
	if err := os.Mkdir(filepath.Join(realDir, "globalmount"), 0o750); err != nil {
		t.Fatal(err)
	}
	staging, target := filepath.Join(kubelet, "globalmount"), filepath.Join(kubelet, "mount")

	if err := f.stageAt(staging); err != nil {
		t.Fatal(err)
	}
	if err := f.publishAt(staging, target); err != nil {
		t.Fatal(err)
	}
	mounts := f.mounter.Mounts()
	if mounts[filepath.Join(realDir, "mount")].Source != filepath.Join(realDir, "globalmount") {
		t.Fatalf("mounts: %v, want the target mounted from the staging path, both resolved", mounts)
	}
	stats := must[*csi.NodeGetVolumeStatsResponse](t)(f.r.node.NodeGetVolumeStats(context.Background(),
		&csi.NodeGetVolumeStatsRequest{VolumeId: f.vol.VolumeId, VolumePath: target}))
	if u := stats.Usage[0]; u.Available == 0 {
		t.Errorf("usage %v: want it read, the target seen mounted through its resolved path", u)
	}
	if err := f.unpublishAt(target); err != nil {
		t.Fatal(err)
	}
	if err := f.unstageAt(staging); err != nil {
		t.Fatal(err)
	}
	if len(f.mounter.Mounts()) != 0 {
		t.Errorf("mounts after unstaging: %v, want none", f.mounter.Mounts())
	}
	if _, err := os.Lstat(filepath.Join(realDir, "mount")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the target is still there after unpublishing: %v", err)
	}
}

// state reads the state file the driver wrote.
func (r *runningDriver) state(t *testing.T) *state {
	t.Helper()
	st, _, err := readState(filepath.Join(r.cfg.DataDir, "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// recordCheckingMounter is a FakeMounter that, before each bind mount, asks
// whether the driver's state file already records the mount.
type recordCheckingMounter struct {
	*FakeMounter
	statePath  string
	unrecorded []string
}

func (m *recordCheckingMounter) BindMount(source, target string, readOnly bool, options []string) error {
	st, _, err := readState(m.statePath)
	if err != nil || !recordsMountAt(st, target) {
		m.unrecorded = append(m.unrecorded, target)
	}
	return m.FakeMounter.BindMount(source, target, readOnly, options)
}

func recordsMountAt(st *state, real string) bool {
	for _, v := range st.Volumes.All() {
		for _, s := range v.Stagings {
			if s.realPath() == real {
				return true
			}
		}
		for target, p := range v.Publications {
			if p.realPath(target) == real {
				return true
			}
		}
	}
	return false
}

// TestMountsAreRecordedBeforeTheyAreMade: since the node calls undo only
// what the state records, every staging and publication is on disk before
// its mount, so a driver dying in between leaves nothing it cannot undo.
// Here the kernel then loses the mounts too (a reboot), and unpublishing and
// unstaging what was recorded but never mounted still works.
func TestMountsAreRecordedBeforeTheyAreMade(t *testing.T) {
	dir := shortTempDir(t)
	cfg := testConfig(dir, nil)
	mounter := &recordCheckingMounter{FakeMounter: NewFakeMounter(), statePath: filepath.Join(cfg.DataDir, "state.json")}
	cfg.Mounter = mounter
	staging, target := filepath.Join(dir, "staging"), filepath.Join(dir, "target")
	r := startDriver(t, cfg)
	vol := must[*csi.CreateVolumeResponse](t)(r.controller.CreateVolume(context.Background(), createReq("v"))).Volume
	stageAndPublish(t, r, vol.VolumeId, staging, target)
	if len(mounter.unrecorded) != 0 || len(mounter.Mounts()) != 2 {
		t.Fatalf("mounted before being recorded: %v (mounts %v)", mounter.unrecorded, mounter.Mounts())
	}
	r.stop(t)

	cfg.Mounter = NewFakeMounter()
	r = startDriver(t, cfg)
	if _, err := r.node.NodeUnpublishVolume(context.Background(), &csi.NodeUnpublishVolumeRequest{VolumeId: vol.VolumeId, TargetPath: target}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(target); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the recorded target is still there after unpublishing: %v", err)
	}
	if _, err := r.node.NodeUnstageVolume(context.Background(), &csi.NodeUnstageVolumeRequest{VolumeId: vol.VolumeId, StagingTargetPath: staging}); err != nil {
		t.Fatal(err)
	}
	if v := r.state(t).Volumes.Get(vol.VolumeId); len(v.Stagings) != 0 || len(v.Publications) != 0 {
		t.Errorf("state after unpublishing and unstaging: stagings %v, publications %v; want neither", v.Stagings, v.Publications)
	}
}
