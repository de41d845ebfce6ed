package hostpath

import (
	"context"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
)

// A driver configured with another name and topology key reports them
// everywhere a CO reads them, and takes its topology requirements in that
// key: tests use this to stand in for a CSI driver an in-tree plugin
// migrated to.
func TestDriverServesUnderTheConfiguredNameAndTopologyKey(t *testing.T) {
	const name, key = "ebs.csi.aws.com", "topology.ebs.csi.aws.com/zone"
	cfg := testConfig(shortTempDir(t), NewFakeMounter())
	cfg.Name, cfg.TopologyKey = name, key
	r := startDriver(t, cfg)
	ctx := context.Background()
	info := must[*csi.GetPluginInfoResponse](t)(r.identity.GetPluginInfo(ctx, &csi.GetPluginInfoRequest{}))
	if info.GetName() != name {
		t.Errorf("plugin name %q, want %q", info.GetName(), name)
	}
	node := must[*csi.NodeGetInfoResponse](t)(r.node.NodeGetInfo(ctx, &csi.NodeGetInfoRequest{}))
	want := map[string]string{key: testNode}
	if got := node.GetAccessibleTopology().GetSegments(); len(got) != 1 || got[key] != testNode {
		t.Errorf("node topology %v, want %v", got, want)
	}
	req := createReq("v1")
	req.AccessibilityRequirements = &csi.TopologyRequirement{Requisite: []*csi.Topology{{Segments: want}}}
	vol := must[*csi.CreateVolumeResponse](t)(r.controller.CreateVolume(ctx, req)).GetVolume()
	if got := vol.GetAccessibleTopology(); len(got) != 1 || got[0].GetSegments()[key] != testNode {
		t.Errorf("volume topology %v, want %v", got, want)
	}
}
