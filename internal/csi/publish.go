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
	ctx, cancel := context.WithTimeout(ctx, publishTimeout)
	defer cancel()
	start := time.Now()
	resp, err := e.controller.ControllerPublishVolume(ctx, req)
	e.metrics.observe(e.Info.Driver, "ControllerPublishVolume", err, start)
	if err != nil {
		return nil, err
	}
	return resp.GetPublishContext(), nil
}

// ControllerUnpublishVolume detaches a volume from a node.
func (e *Endpoint) ControllerUnpublishVolume(ctx context.Context, req *csi.ControllerUnpublishVolumeRequest) error {
	ctx, cancel := context.WithTimeout(ctx, publishTimeout)
	defer cancel()
	start := time.Now()
	_, err := e.controller.ControllerUnpublishVolume(ctx, req)
	e.metrics.observe(e.Info.Driver, "ControllerUnpublishVolume", err, start)
	return err
}

// NodeStageVolume stages a volume on the endpoint's node.
func (e *Endpoint) NodeStageVolume(ctx context.Context, req *csi.NodeStageVolumeRequest) error {
	return e.nodeCall(ctx, "NodeStageVolume", func(ctx context.Context) error {
		_, err := e.node.NodeStageVolume(ctx, req)
		return err
	})
}

// NodeUnstageVolume unstages a volume from the endpoint's node.
func (e *Endpoint) NodeUnstageVolume(ctx context.Context, req *csi.NodeUnstageVolumeRequest) error {
	return e.nodeCall(ctx, "NodeUnstageVolume", func(ctx context.Context) error {
		_, err := e.node.NodeUnstageVolume(ctx, req)
		return err
	})
}

// NodePublishVolume publishes a volume at a pod's target path.
func (e *Endpoint) NodePublishVolume(ctx context.Context, req *csi.NodePublishVolumeRequest) error {
	return e.nodeCall(ctx, "NodePublishVolume", func(ctx context.Context) error {
		_, err := e.node.NodePublishVolume(ctx, req)
		return err
	})
}

// NodeUnpublishVolume unpublishes a volume from a pod's target path.
func (e *Endpoint) NodeUnpublishVolume(ctx context.Context, req *csi.NodeUnpublishVolumeRequest) error {
	return e.nodeCall(ctx, "NodeUnpublishVolume", func(ctx context.Context) error {
		_, err := e.node.NodeUnpublishVolume(ctx, req)
		return err
	})
}

// NodeExpandVolume grows a volume's filesystem on the endpoint's node and
// returns the capacity the driver reports (0 if it reports none).
func (e *Endpoint) NodeExpandVolume(ctx context.Context, req *csi.NodeExpandVolumeRequest) (int64, error) {
	var capacity int64
	err := e.nodeCall(ctx, "NodeExpandVolume", func(ctx context.Context) error {
		resp, err := e.node.NodeExpandVolume(ctx, req)
		capacity = resp.GetCapacityBytes()
		return err
	})
	return capacity, err
}

func (e *Endpoint) nodeCall(ctx context.Context, method string, call func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, nodeTimeout)
	defer cancel()
	start := time.Now()
	err := call(ctx)
	e.metrics.observe(e.Info.Driver, method, err, start)
	return err
}
