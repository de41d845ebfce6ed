package csi

import (
	"context"

	"github.com/container-storage-interface/spec/lib/go/csi"
)

// NodeInfo asks the node service NodeGetInfo again, as the kubelet does to
// refresh a CSINode's allocatable count: it returns the endpoint's Info with
// the node ID, topology and volume limit as the driver answers now; the
// Endpoint's own Info stays as probed.
func (e *Endpoint) NodeInfo(ctx context.Context) (Info, error) {
	info := e.Info
	resp, err := timed(ctx, e, "NodeGetInfo", probeTimeout, e.node.NodeGetInfo, &csi.NodeGetInfoRequest{})
	if err != nil {
		return info, err
	}
	info.NodeID = resp.GetNodeId()
	info.Topology = resp.GetAccessibleTopology().GetSegments()
	info.MaxVolumes = resp.GetMaxVolumesPerNode()
	return info, nil
}
