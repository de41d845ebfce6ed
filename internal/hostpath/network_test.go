package hostpath

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
)

func withMode(c *csi.VolumeCapability, mode csi.VolumeCapability_AccessMode_Mode) *csi.VolumeCapability {
	c.AccessMode = &csi.VolumeCapability_AccessMode{Mode: mode}
	return c
}

func rwx() *csi.VolumeCapability {
	return withMode(mountCap(), csi.VolumeCapability_AccessMode_MULTI_NODE_MULTI_WRITER)
}

func publishTo(r *runningDriver, id, node string, c *csi.VolumeCapability) error {
	_, err := r.controller.ControllerPublishVolume(context.Background(), &csi.ControllerPublishVolumeRequest{
		VolumeId: id, NodeId: node, VolumeCapability: c,
	})
	return err
}

func unpublishFrom(t *testing.T, r *runningDriver, id, node string) {
	t.Helper()
	if _, err := r.controller.ControllerUnpublishVolume(context.Background(), &csi.ControllerUnpublishVolumeRequest{VolumeId: id, NodeId: node}); err != nil {
		t.Fatal(err)
	}
}

func stageOn(r *runningDriver, node, id, path string, c *csi.VolumeCapability) error {
	_, err := r.nodes[node].NodeStageVolume(context.Background(), &csi.NodeStageVolumeRequest{
		VolumeId: id, StagingTargetPath: path, VolumeCapability: c,
	})
	return err
}

func startNetwork(t *testing.T) (dir string, r *runningDriver) {
	t.Helper()
	dir = shortTempDir(t)
	return dir, startDriver(t, testNetworkConfig(dir, NewFakeMounter(), "node-1", "node-2"))
}

func createRWX(t *testing.T, r *runningDriver, name string) *csi.Volume {
	t.Helper()
	req := createReq(name)
	req.VolumeCapabilities = []*csi.VolumeCapability{rwx()}
	return must[*csi.CreateVolumeResponse](t)(r.controller.CreateVolume(context.Background(), req)).Volume
}

func TestNetworkVolumesAreTopologyFreeAndEachNodeSocketIsItsNode(t *testing.T) {
	_, r := startNetwork(t)
	vol := must[*csi.CreateVolumeResponse](t)(r.controller.CreateVolume(context.Background(), createReq("v"))).Volume
	if len(vol.AccessibleTopology) != 0 {
		t.Errorf("network volume has topology %v, want none", vol.AccessibleTopology)
	}
	for _, node := range []string{"node-1", "node-2"} {
		info := must[*csi.NodeGetInfoResponse](t)(r.nodes[node].NodeGetInfo(context.Background(), &csi.NodeGetInfoRequest{}))
		if info.NodeId != node || info.AccessibleTopology != nil {
			t.Errorf("NodeGetInfo on %s's socket = %v, want node ID %s and no topology", node, info, node)
		}
	}
	caps := must[*csi.GetPluginCapabilitiesResponse](t)(r.identity.GetPluginCapabilities(context.Background(), &csi.GetPluginCapabilitiesRequest{}))
	for _, c := range caps.Capabilities {
		if c.GetService().GetType() == csi.PluginCapability_Service_VOLUME_ACCESSIBILITY_CONSTRAINTS {
			t.Error("a network driver reports VOLUME_ACCESSIBILITY_CONSTRAINTS")
		}
	}
	// The controller's socket serves no node service.
	_, err := csi.NewNodeClient(r.conns[0]).NodeGetInfo(context.Background(), &csi.NodeGetInfoRequest{})
	wantCode(t, err, codes.Unimplemented)
}

func TestSingleNodeVolumeAttachedToOneNodeIsRefusedToAnother(t *testing.T) {
	_, r := startNetwork(t)
	id := must[*csi.CreateVolumeResponse](t)(r.controller.CreateVolume(context.Background(), createReq("v"))).Volume.VolumeId
	if err := publishTo(r, id, "node-1", mountCap()); err != nil {
		t.Fatal(err)
	}
	err := publishTo(r, id, "node-2", mountCap())
	wantCode(t, err, codes.FailedPrecondition)
	if !strings.Contains(err.Error(), "Volume published to another node") {
		t.Errorf("error %q does not say the volume is published to another node", err)
	}
	// Detached from node-1, the volume follows its pod to node-2.
	unpublishFrom(t, r, id, "node-1")
	if err := publishTo(r, id, "node-2", mountCap()); err != nil {
		t.Fatalf("attach to node-2 after detaching from node-1: %v", err)
	}
}

func TestAttachingToAnUnknownNodeIsNotFound(t *testing.T) {
	_, r := startNetwork(t)
	id := must[*csi.CreateVolumeResponse](t)(r.controller.CreateVolume(context.Background(), createReq("v"))).Volume.VolumeId
	wantCode(t, publishTo(r, id, "node-9", mountCap()), codes.NotFound)
}

func TestMultiNodeVolumeIsStagedOnTwoNodesAndRecordedPerNode(t *testing.T) {
	dir, r := startNetwork(t)
	id := createRWX(t, r, "v").VolumeId
	for _, node := range []string{"node-1", "node-2"} {
		if err := publishTo(r, id, node, rwx()); err != nil {
			t.Fatalf("attach to %s: %v", node, err)
		}
		if err := stageOn(r, node, id, filepath.Join(dir, node+"-staging"), rwx()); err != nil {
			t.Fatalf("stage on %s: %v", node, err)
		}
	}
	st := r.state(t).Volumes.Get(id).Stagings
	if len(st) != 2 || st["node-1"].Path != filepath.Join(dir, "node-1-staging") || st["node-2"].Path != filepath.Join(dir, "node-2-staging") {
		t.Fatalf("stagings %v, want one per node at its own path", st)
	}
	// Unstaging on node-1 leaves node-2's staging alone, even asked at node-2's path.
	if _, err := r.nodes["node-1"].NodeUnstageVolume(context.Background(), &csi.NodeUnstageVolumeRequest{
		VolumeId: id, StagingTargetPath: filepath.Join(dir, "node-2-staging")}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.nodes["node-1"].NodeUnstageVolume(context.Background(), &csi.NodeUnstageVolumeRequest{
		VolumeId: id, StagingTargetPath: filepath.Join(dir, "node-1-staging")}); err != nil {
		t.Fatal(err)
	}
	if st := r.state(t).Volumes.Get(id).Stagings; len(st) != 1 || st["node-2"].Path == "" {
		t.Errorf("stagings after unstaging on node-1: %v, want node-2's only", st)
	}
}

func TestStagingNeedsTheVolumeAttachedToThatNode(t *testing.T) {
	dir, r := startNetwork(t)
	id := createRWX(t, r, "v").VolumeId
	if err := publishTo(r, id, "node-1", rwx()); err != nil {
		t.Fatal(err)
	}
	err := stageOn(r, "node-2", id, filepath.Join(dir, "staging"), rwx())
	wantCode(t, err, codes.FailedPrecondition)
}

func TestPublicationsOfAnotherNodeAreNotUndone(t *testing.T) {
	dir, r := startNetwork(t)
	id := createRWX(t, r, "v").VolumeId
	staging, target := filepath.Join(dir, "staging"), filepath.Join(dir, "target")
	if err := publishTo(r, id, "node-1", rwx()); err != nil {
		t.Fatal(err)
	}
	if err := stageOn(r, "node-1", id, staging, rwx()); err != nil {
		t.Fatal(err)
	}
	if _, err := r.nodes["node-1"].NodePublishVolume(context.Background(), &csi.NodePublishVolumeRequest{
		VolumeId: id, StagingTargetPath: staging, TargetPath: target, VolumeCapability: rwx()}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.nodes["node-2"].NodeUnpublishVolume(context.Background(), &csi.NodeUnpublishVolumeRequest{VolumeId: id, TargetPath: target}); err != nil {
		t.Fatal(err)
	}
	if p := r.state(t).Volumes.Get(id).Publications[target]; p.Node != "node-1" {
		t.Errorf("node-2 unpublished node-1's publication: %v", r.state(t).Volumes.Get(id).Publications)
	}
}

func TestNetworkRestartKeepsPerNodeRecords(t *testing.T) {
	dir := shortTempDir(t)
	cfg := testNetworkConfig(dir, NewFakeMounter(), "node-1", "node-2")
	r := startDriver(t, cfg)
	id := createRWX(t, r, "v").VolumeId
	for _, node := range []string{"node-1", "node-2"} {
		if err := publishTo(r, id, node, rwx()); err != nil {
			t.Fatal(err)
		}
		if err := stageOn(r, node, id, filepath.Join(dir, node+"-staging"), rwx()); err != nil {
			t.Fatal(err)
		}
	}
	r.stop(t)

	r = startDriver(t, cfg)
	v := r.state(t).Volumes.Get(id)
	if len(v.Stagings) != 2 || len(v.Attachments) != 2 {
		t.Fatalf("after a restart: stagings %v, attachments %v; want both nodes' records", v.Stagings, v.Attachments)
	}
	// A repeated stage is recognized as recorded, on each node.
	for _, node := range []string{"node-1", "node-2"} {
		if err := stageOn(r, node, id, filepath.Join(dir, node+"-staging"), rwx()); err != nil {
			t.Errorf("staging again on %s after a restart: %v", node, err)
		}
	}
}

// A state file written by the node-local driver before stagings were kept
// per node still loads: its one staging and its publications belong to the
// volume's node.
func TestVersion1StateLoadsWithItsStagingOnTheVolumesNode(t *testing.T) {
	dir := shortTempDir(t)
	cfg := testConfig(dir, NewFakeMounter())
	staging, target := filepath.Join(dir, "staging"), filepath.Join(dir, "target")
	id := volumeIDFor("v")
	if err := os.MkdirAll(filepath.Join(cfg.DataDir, "volumes", id), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{staging, target} {
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	v1 := `{"version": 1, "snapshots": {}, "volumes": {"` + id + `": {
		"id": "` + id + `", "name": "v", "capacityBytes": 1073741824, "accessType": "mount", "nodeID": "node-1",
		"createdAt": "2026-01-01T00:00:00Z", "attachments": {"node-1": {"readOnly": false}},
		"staging": {"path": "` + staging + `", "realPath": "` + staging + `"},
		"publications": {"` + target + `": {"readOnly": false, "mode": "SINGLE_NODE_WRITER", "realPath": "` + target + `"}}}}}`
	if err := os.WriteFile(filepath.Join(cfg.DataDir, "state.json"), []byte(v1), 0o600); err != nil {
		t.Fatal(err)
	}
	r := startDriver(t, cfg)
	if _, err := r.node.NodeUnpublishVolume(context.Background(), &csi.NodeUnpublishVolumeRequest{VolumeId: id, TargetPath: target}); err != nil {
		t.Fatal(err)
	}
	if _, err := r.node.NodeUnstageVolume(context.Background(), &csi.NodeUnstageVolumeRequest{VolumeId: id, StagingTargetPath: staging}); err != nil {
		t.Fatal(err)
	}
	st := r.state(t)
	if v := st.Volumes.Get(id); st.Version != stateVersion || len(v.Stagings) != 0 || v.LegacyStaging != nil || len(v.Publications) != 0 {
		t.Errorf("state after unpublishing and unstaging: version %d, %+v; want both undone", st.Version, v)
	}
	if _, err := os.Stat(target); !os.IsNotExist(err) {
		t.Errorf("the recorded target is still there: %v", err)
	}
}

func TestDataDirsOfTheTwoModesAreNotInterchangeable(t *testing.T) {
	dir := shortTempDir(t)
	local := testConfig(dir, NewFakeMounter())
	r := startDriver(t, local)
	must[*csi.CreateVolumeResponse](t)(r.controller.CreateVolume(context.Background(), createReq("v")))
	r.stop(t)
	network := testNetworkConfig(dir, NewFakeMounter(), "node-1")
	d, err := New(network)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "cannot become a network one") {
		t.Errorf("network driver on a node-local data dir: %v", err)
	}

	dir = shortTempDir(t)
	network = testNetworkConfig(dir, NewFakeMounter(), "node-1")
	r = startDriver(t, network)
	must[*csi.CreateVolumeResponse](t)(r.controller.CreateVolume(context.Background(), createReq("v")))
	r.stop(t)
	if d, err = New(testConfig(dir, NewFakeMounter())); err != nil {
		t.Fatal(err)
	}
	if err := d.Run(context.Background()); err == nil || !strings.Contains(err.Error(), "network volumes are served by a network driver only") {
		t.Errorf("node-local driver on a network data dir: %v", err)
	}
}

func TestNetworkConfigIsChecked(t *testing.T) {
	good := func() Config { return testNetworkConfig("/tmp/x", nil, "node-1", "node-2") }
	for _, tc := range []struct {
		name   string
		modify func(*Config)
		want   string
	}{
		{"a node ID", func(c *Config) { c.NodeID = "node-1" }, "serves every node"},
		{"no nodes", func(c *Config) { c.NodeEndpoints = nil }, "needs node endpoints"},
		{"a bad node name", func(c *Config) { c.NodeEndpoints["a/b"] = "unix:///tmp/x/ab.sock" }, "node ID"},
		{"a node on the controller's socket", func(c *Config) { c.NodeEndpoints["node-1"] = c.Endpoint }, "served twice"},
		{"a relative node socket", func(c *Config) { c.NodeEndpoints["node-1"] = "unix://x.sock" }, "absolute"},
		{"node endpoints in node-local mode", func(c *Config) { c.Network, c.NodeID = false, "node-1" }, "network mode only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := good()
			tc.modify(&cfg)
			if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New: %v, want an error containing %q", err, tc.want)
			}
		})
	}
	d, err := New(good())
	if err != nil {
		t.Fatal(err)
	}
	if d.cfg.Name != NetworkDriverName || !d.cfg.AttachRequired {
		t.Errorf("network driver named %q with attach required %t, want %q and true", d.cfg.Name, d.cfg.AttachRequired, NetworkDriverName)
	}
}

func TestAttachConflicts(t *testing.T) {
	const (
		snw  = "SINGLE_NODE_WRITER"
		rox  = "MULTI_NODE_READER_ONLY"
		mnsw = "MULTI_NODE_SINGLE_WRITER"
		mnmw = "MULTI_NODE_MULTI_WRITER"
	)
	for _, tc := range []struct {
		name     string
		attached map[string]attachment
		want     attachment
		refused  bool
	}{
		{"first attachment", nil, attachment{Mode: snw}, false},
		{"single-node elsewhere", map[string]attachment{"b": {Mode: snw}}, attachment{Mode: snw}, true},
		{"single-node wanted, multi-node elsewhere", map[string]attachment{"b": {Mode: mnmw}}, attachment{Mode: snw}, true},
		{"multi-node wanted, single-node elsewhere", map[string]attachment{"b": {Mode: snw}}, attachment{Mode: mnmw}, true},
		{"version 1 record elsewhere counts as single-node", map[string]attachment{"b": {}}, attachment{Mode: mnmw}, true},
		{"again on the same node", map[string]attachment{"a": {Mode: snw}}, attachment{Mode: snw}, false},
		{"many writers", map[string]attachment{"b": {Mode: mnmw}, "c": {Mode: mnmw}}, attachment{Mode: mnmw}, false},
		{"many readers", map[string]attachment{"b": {Mode: rox, ReadOnly: true}}, attachment{Mode: rox, ReadOnly: true}, false},
		{"a second single writer", map[string]attachment{"b": {Mode: mnsw}}, attachment{Mode: mnsw}, true},
		{"a reader beside the single writer", map[string]attachment{"b": {Mode: mnsw}}, attachment{Mode: mnsw, ReadOnly: true}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := attachConflict(&volume{ID: "vol-x", Attachments: tc.attached}, "a", tc.want)
			if (got != "") != tc.refused {
				t.Errorf("attachConflict = %q, want refused=%t", got, tc.refused)
			}
		})
	}
}
