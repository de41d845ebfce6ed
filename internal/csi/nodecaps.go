package csi

import (
	"context"

	"github.com/container-storage-interface/spec/lib/go/csi"
)

// NodeCapabilities asks the node service its capabilities again, as the
// kubelet does before each decision that rests on one (stage or not,
// expand, stats). It returns the endpoint's Info with the node service's
// flags as the driver answers now; the Endpoint's own Info stays as probed.
func (e *Endpoint) NodeCapabilities(ctx context.Context) (Info, error) {
	info := e.Info
	resp, err := timed(ctx, e, "NodeGetCapabilities", probeTimeout, e.node.NodeGetCapabilities, &csi.NodeGetCapabilitiesRequest{})
	if err != nil {
		return info, err
	}
	setNodeCapabilities(&info, resp.GetCapabilities())
	return info, nil
}

// setNodeCapabilities sets the node service's flags of info from its
// NodeGetCapabilities answer.
func setNodeCapabilities(info *Info, caps []*csi.NodeServiceCapability) {
	info.Stage, info.Expand, info.NodeSingleNodeMultiWriter = false, false, false
	info.VolumeMountGroup, info.VolumeStats = false, false
	info.NodeVolumeHealth, info.StorageHealth = false, false
	for _, c := range caps {
		switch c.GetRpc().GetType() {
		case csi.NodeServiceCapability_RPC_STAGE_UNSTAGE_VOLUME:
			info.Stage = true
		case csi.NodeServiceCapability_RPC_EXPAND_VOLUME:
			info.Expand = true
		case csi.NodeServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER:
			info.NodeSingleNodeMultiWriter = true
		case csi.NodeServiceCapability_RPC_VOLUME_MOUNT_GROUP:
			info.VolumeMountGroup = true
		case csi.NodeServiceCapability_RPC_GET_VOLUME_STATS:
			info.VolumeStats = true
		case csi.NodeServiceCapability_RPC_GET_VOLUME_HEALTH:
			info.NodeVolumeHealth = true
		case csi.NodeServiceCapability_RPC_GET_STORAGE_HEALTH:
			info.StorageHealth = true
		}
	}
}
