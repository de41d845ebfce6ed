package csi

import (
	"context"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
)

// Timeouts of the attach and mount calls. publishTimeout is the
// external-attacher's --timeout default; nodeTimeout is the kubelet's
// csiTimeout for node operations.
const (
	publishTimeout = 15 * time.Second
	nodeTimeout    = 2 * time.Minute
)

// ControllerPublishVolume attaches a volume to a node and returns the
// publish context the node calls need.
func (e *Endpoint) ControllerPublishVolume(ctx context.Context, req *csi.ControllerPublishVolumeRequest) (map[string]string, error) {
	resp, err := timed(ctx, e, "ControllerPublishVolume", publishTimeout, e.controller.ControllerPublishVolume, req)
	if err != nil {
		return nil, err
	}
	return resp.GetPublishContext(), nil
}

// ControllerUnpublishVolume detaches a volume from a node.
func (e *Endpoint) ControllerUnpublishVolume(ctx context.Context, req *csi.ControllerUnpublishVolumeRequest) error {
	_, err := timed(ctx, e, "ControllerUnpublishVolume", publishTimeout, e.controller.ControllerUnpublishVolume, req)
	return err
}

// NodeStageVolume stages a volume on the endpoint's node.
func (e *Endpoint) NodeStageVolume(ctx context.Context, req *csi.NodeStageVolumeRequest) error {
	_, err := timed(ctx, e, "NodeStageVolume", nodeTimeout, e.node.NodeStageVolume, req)
	return err
}

// NodeUnstageVolume unstages a volume from the endpoint's node.
func (e *Endpoint) NodeUnstageVolume(ctx context.Context, req *csi.NodeUnstageVolumeRequest) error {
	_, err := timed(ctx, e, "NodeUnstageVolume", nodeTimeout, e.node.NodeUnstageVolume, req)
	return err
}

// NodePublishVolume publishes a volume at a pod's target path.
func (e *Endpoint) NodePublishVolume(ctx context.Context, req *csi.NodePublishVolumeRequest) error {
	_, err := timed(ctx, e, "NodePublishVolume", nodeTimeout, e.node.NodePublishVolume, req)
	return err
}

// NodeUnpublishVolume unpublishes a volume from a pod's target path.
func (e *Endpoint) NodeUnpublishVolume(ctx context.Context, req *csi.NodeUnpublishVolumeRequest) error {
	_, err := timed(ctx, e, "NodeUnpublishVolume", nodeTimeout, e.node.NodeUnpublishVolume, req)
	return err
}

// NodeExpandVolume grows a volume's filesystem on the endpoint's node and
// returns the capacity the driver reports (0 if it reports none).
func (e *Endpoint) NodeExpandVolume(ctx context.Context, req *csi.NodeExpandVolumeRequest) (int64, error) {
	resp, err := timed(ctx, e, "NodeExpandVolume", nodeTimeout, e.node.NodeExpandVolume, req)
	return resp.GetCapacityBytes(), err
}

// NodeGetVolumeStats asks the usage (and condition) of a volume published
// at a path of the endpoint's node.
func (e *Endpoint) NodeGetVolumeStats(ctx context.Context, req *csi.NodeGetVolumeStatsRequest) (*csi.NodeGetVolumeStatsResponse, error) {
	return timed(ctx, e, "NodeGetVolumeStats", nodeTimeout, e.node.NodeGetVolumeStats, req)
}
