package hostpath

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
)

// inlineReq is the kubelet's NodePublishVolume of an inline volume (its
// podInfoOnMount keys included) at target; attrs are the pod author's.
func inlineReq(id, target string, attrs map[string]string) *csi.NodePublishVolumeRequest {
	ctx := map[string]string{EphemeralContextKey: "true", "csi.storage.k8s.io/pod.name": "p",
		"csi.storage.k8s.io/pod.namespace": "ns", "csi.storage.k8s.io/pod.uid": "uid-1", "csi.storage.k8s.io/serviceAccount.name": "default"}
	for k, v := range attrs {
		ctx[k] = v
	}
	return &csi.NodePublishVolumeRequest{VolumeId: id, TargetPath: target, VolumeCapability: mountCap(), VolumeContext: ctx}
}

const inlineID = "csi-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func freeBytes(t *testing.T, r *runningDriver) int64 {
	t.Helper()
	resp := must[*csi.GetCapacityResponse](t)(r.controller.GetCapacity(context.Background(), &csi.GetCapacityRequest{}))
	return resp.GetAvailableCapacity()
}

func TestInlineVolumeLivesFromPublishToUnpublish(t *testing.T) {
	ctx := context.Background()
	dir := shortTempDir(t)
	mounter := NewFakeMounter()
	r := startDriver(t, testConfig(dir, mounter))
	target := filepath.Join(dir, "target")
	before := freeBytes(t, r)
	req := inlineReq(inlineID, target, map[string]string{SizeAttribute: "64Mi"})
	for range 2 { // a repeated publish is the same publish
		must[*csi.NodePublishVolumeResponse](t)(r.node.NodePublishVolume(ctx, req))
	}
	data := r.d(t).disk.ephemeralPath(inlineID)
	if m, ok := mounter.Mounts()[target]; !ok || m.Source != data {
		t.Fatalf("mounts %v, want %s mounted from %s", mounter.Mounts(), target, data)
	}
	if got := before - freeBytes(t, r); got != 64<<20 {
		t.Errorf("the inline volume takes %d bytes of the capacity, want 64Mi", got)
	}
	list := must[*csi.ListVolumesResponse](t)(r.controller.ListVolumes(ctx, &csi.ListVolumesRequest{}))
	if len(list.Entries) != 0 {
		t.Errorf("ListVolumes lists %v: inline volumes are the node's, not the controller's", list.Entries)
	}
	// Another target or a different size for the same volume is refused.
	wantCode(t, errOf(r.node.NodePublishVolume(ctx, inlineReq(inlineID, filepath.Join(dir, "other"), nil))), codes.FailedPrecondition)
	wantCode(t, errOf(r.node.NodePublishVolume(ctx, inlineReq(inlineID, target, nil))), codes.AlreadyExists)

	unpub := &csi.NodeUnpublishVolumeRequest{VolumeId: inlineID, TargetPath: target}
	must[*csi.NodeUnpublishVolumeResponse](t)(r.node.NodeUnpublishVolume(ctx, unpub))
	if _, err := os.Lstat(data); !os.IsNotExist(err) {
		t.Errorf("the inline volume's data is still there after unpublish (%v)", err)
	}
	if _, ok := mounter.Mounts()[target]; ok {
		t.Error("the target is still mounted after unpublish")
	}
	if after := freeBytes(t, r); after != before {
		t.Errorf("free capacity %d after unpublish, want %d back", after, before)
	}
	wantCode(t, errOf(r.node.NodeUnpublishVolume(ctx, unpub)), codes.NotFound)
}

func TestInlineVolumeDefaultSize(t *testing.T) {
	dir := shortTempDir(t)
	r := startDriver(t, testConfig(dir, NewFakeMounter()))
	before := freeBytes(t, r)
	must[*csi.NodePublishVolumeResponse](t)(r.node.NodePublishVolume(context.Background(), inlineReq(inlineID, filepath.Join(dir, "t"), nil)))
	if got := before - freeBytes(t, r); got != DefaultEphemeralBytes {
		t.Errorf("an inline volume without a size takes %d bytes, want %d", got, DefaultEphemeralBytes)
	}
}

// The pod author writes the inline volume's attributes: they reach only
// the inline path, never a persistent volume, whatever they name.
func TestInlineVolumeAttributesAreTheUsersAndChecked(t *testing.T) {
	ctx := context.Background()
	f := newNodeFixture(t, NewFakeMounter(), mountCap())
	if err := f.stage(mountCap()); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(filepath.Dir(f.target), "inline")
	for name, attrs := range map[string]map[string]string{
		"a persistent volume named":  {"volumeID": f.vol.VolumeId},
		"a staging path named":       {"stagingTargetPath": f.staging},
		"a size that is no quantity": {SizeAttribute: "lots"},
		"a negative size":            {SizeAttribute: "-1Mi"},
	} {
		t.Run(name, func(t *testing.T) {
			wantCode(t, errOf(f.r.node.NodePublishVolume(ctx, inlineReq(inlineID, target, attrs))), codes.InvalidArgument)
		})
	}
	// The CO's volume ID of a persistent volume with the ephemeral key set:
	// refused, nothing mounted, the volume left as it was.
	wantCode(t, errOf(f.r.node.NodePublishVolume(ctx, inlineReq(f.vol.VolumeId, target, nil))), codes.AlreadyExists)
	if _, ok := f.mounter.Mounts()[target]; ok {
		t.Fatal("a refused inline publish mounted something")
	}
	if vol := f.r.d(t).store.current().Volumes.Get(f.vol.VolumeId); len(vol.Publications) != 0 {
		t.Fatalf("the persistent volume gained publications %v", vol.Publications)
	}
	big := inlineReq(inlineID, target, map[string]string{SizeAttribute: "2Ti"})
	wantCode(t, errOf(f.r.node.NodePublishVolume(ctx, big)), codes.ResourceExhausted)
	block := inlineReq(inlineID, target, nil)
	block.VolumeCapability = blockCap()
	wantCode(t, errOf(f.r.node.NodePublishVolume(ctx, block)), codes.InvalidArgument)
	if n := f.r.d(t).store.current().Ephemeral.Len(); n != 0 {
		t.Fatalf("%d inline volumes recorded after refused publishes", n)
	}
}

// A persistent volume cannot be published where an inline one is, nor an
// inline one where a persistent one is staged.
func TestInlineAndPersistentPathsDoNotMeet(t *testing.T) {
	ctx := context.Background()
	f := newNodeFixture(t, NewFakeMounter(), mountCap())
	if err := f.stage(mountCap()); err != nil {
		t.Fatal(err)
	}
	must[*csi.NodePublishVolumeResponse](t)(f.r.node.NodePublishVolume(ctx, inlineReq(inlineID, f.target, nil)))
	wantCode(t, f.publish(mountCap(), false), codes.FailedPrecondition)
	wantCode(t, errOf(f.r.node.NodePublishVolume(ctx, inlineReq("csi-other", f.staging, nil))), codes.FailedPrecondition)
}

func TestNetworkDriverRefusesInlineVolumes(t *testing.T) {
	dir := shortTempDir(t)
	r := startDriver(t, testNetworkConfig(dir, NewFakeMounter(), testNode))
	wantCode(t, errOf(r.node.NodePublishVolume(context.Background(), inlineReq(inlineID, filepath.Join(dir, "t"), nil))), codes.InvalidArgument)
}

// A publish that fails after the volume is recorded (here: its target's
// directory is missing), then a driver restart: the unpublish the CO owes
// the pod deletes the volume, data and record; repeated after a restart
// part way, it still succeeds.
func TestInlineVolumeLeftByAFailedPublishIsDeletedByUnpublish(t *testing.T) {
	ctx := context.Background()
	dir := shortTempDir(t)
	cfg := testConfig(dir, NewFakeMounter())
	r := startDriver(t, cfg)
	target := filepath.Join(dir, "missing", "mount")
	if _, err := r.node.NodePublishVolume(ctx, inlineReq(inlineID, target, nil)); err == nil {
		t.Fatal("publish into a missing directory succeeded")
	}
	data := r.d(t).disk.ephemeralPath(inlineID)
	if _, err := os.Stat(data); err != nil {
		t.Fatalf("the failed publish left no data (%v): the test does not test what it says", err)
	}
	r.stop(t)

	r = startDriver(t, cfg)
	if n := r.d(t).store.current().Ephemeral.Len(); n != 1 {
		t.Fatalf("%d inline volumes recorded after the restart, want 1", n)
	}
	unpub := &csi.NodeUnpublishVolumeRequest{VolumeId: inlineID, TargetPath: target}
	must[*csi.NodeUnpublishVolumeResponse](t)(r.node.NodeUnpublishVolume(ctx, unpub))
	if _, err := os.Lstat(data); !os.IsNotExist(err) {
		t.Errorf("data left after unpublish (%v)", err)
	}
	if n := r.d(t).store.current().Ephemeral.Len(); n != 0 {
		t.Errorf("%d inline volumes recorded after unpublish", n)
	}
}

// A restart keeps an inline volume published, data and all; a reboot's
// lost mount is redone by the repeated publish.
func TestInlineVolumeSurvivesRestartAndReboot(t *testing.T) {
	ctx := context.Background()
	dir := shortTempDir(t)
	cfg := testConfig(dir, NewFakeMounter())
	r := startDriver(t, cfg)
	target := filepath.Join(dir, "target")
	req := inlineReq(inlineID, target, nil)
	must[*csi.NodePublishVolumeResponse](t)(r.node.NodePublishVolume(ctx, req))
	data := r.d(t).disk.ephemeralPath(inlineID)
	if err := os.WriteFile(filepath.Join(data, "f"), []byte("kept"), 0o600); err != nil {
		t.Fatal(err)
	}
	r.stop(t)

	rebooted := NewFakeMounter()
	cfg.Mounter = rebooted
	r = startDriver(t, cfg)
	must[*csi.NodePublishVolumeResponse](t)(r.node.NodePublishVolume(ctx, req))
	if m := rebooted.Mounts()[target]; m.Source != data {
		t.Fatalf("mounts after the reboot %v, want the target mounted again", rebooted.Mounts())
	}
	if b, err := os.ReadFile(filepath.Join(data, "f")); err != nil || string(b) != "kept" {
		t.Fatalf("the pod's file after the reboot: %q, %v", b, err)
	}
}

func errOf[T any](_ T, err error) error { return err }
