package hostpath

import (
	"context"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
)

// GetCapacity as the capacity loop asks it: a class's parameters, no volume
// capabilities, the node's own segment. Volumes and snapshots made on the
// node are counted; the maximum volume size is never above what is free;
// another node's segment gets nothing.
func TestGetCapacityPerSegmentCountsWhatIsUsed(t *testing.T) {
	ctx := context.Background()
	cfg := testConfig(shortTempDir(t), NewFakeMounter())
	cfg.Capacity = 4 << 30
	r := startDriver(t, cfg)
	ask := func(node string) *csi.GetCapacityResponse {
		return must[*csi.GetCapacityResponse](t)(r.controller.GetCapacity(ctx, &csi.GetCapacityRequest{
			Parameters:         map[string]string{ParamTier: TierStandard},
			AccessibleTopology: &csi.Topology{Segments: map[string]string{TopologyKey: node}},
		}))
	}
	if got := ask(testNode); got.AvailableCapacity != 4<<30 || got.GetMaximumVolumeSize().GetValue() != 4<<30 {
		t.Errorf("empty node: %v", got)
	}
	req := createReq("one")
	req.CapacityRange.RequiredBytes = 1 << 30
	vol := must[*csi.CreateVolumeResponse](t)(r.controller.CreateVolume(ctx, req)).Volume
	must[*csi.CreateSnapshotResponse](t)(r.controller.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "snap", SourceVolumeId: vol.VolumeId}))
	if got := ask(testNode); got.AvailableCapacity != 2<<30 || got.GetMaximumVolumeSize().GetValue() != 2<<30 {
		t.Errorf("after a 1 GiB volume and its snapshot: %v, want 2 GiB free and at most 2 GiB per volume", got)
	}
	if got := ask("node-2"); got.AvailableCapacity != 0 {
		t.Errorf("another node's segment: %v, want nothing", got)
	}
}
