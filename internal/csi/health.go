package csi

import (
	"context"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
)

// healthTimeout bounds one health call, as the kubelet's csiTimeout does
// its health calls.
const healthTimeout = 2 * time.Minute

// ControllerGetVolumeHealth asks the controller the health of one volume.
func (e *Endpoint) ControllerGetVolumeHealth(ctx context.Context, volumeID string) (*csi.VolumeHealth, error) {
	resp, err := timed(ctx, e, "ControllerGetVolumeHealth", healthTimeout, e.controller.ControllerGetVolumeHealth,
		&csi.ControllerGetVolumeHealthRequest{VolumeId: volumeID})
	if err != nil {
		return nil, err
	}
	return resp.GetVolumeHealth(), nil
}

// ControllerListVolumeHealth returns every abnormal volume the controller
// reports, following pages; a volume not returned is healthy.
func (e *Endpoint) ControllerListVolumeHealth(ctx context.Context) ([]*csi.VolumeHealth, error) {
	ctx, cancel := context.WithTimeout(ctx, listTimeout)
	defer cancel()
	var out []*csi.VolumeHealth
	token := ""
	for {
		start := time.Now()
		resp, err := e.controller.ControllerListVolumeHealth(ctx, &csi.ControllerListVolumeHealthRequest{MaxEntries: listPage, StartingToken: token})
		e.metrics.observe(e.Info.Driver, "ControllerListVolumeHealth", err, start)
		if err != nil {
			return nil, err
		}
		out = append(out, resp.GetEntries()...)
		if token = resp.GetNextToken(); token == "" {
			return out, nil
		}
	}
}

// NodeGetVolumeHealth asks the node service the health of a volume at its
// staging and target paths (either may be empty).
func (e *Endpoint) NodeGetVolumeHealth(ctx context.Context, req *csi.NodeGetVolumeHealthRequest) (*csi.VolumeHealth, error) {
	resp, err := timed(ctx, e, "NodeGetVolumeHealth", healthTimeout, e.node.NodeGetVolumeHealth, req)
	if err != nil {
		return nil, err
	}
	return resp.GetVolumeHealth(), nil
}

// NodeGetStorageHealth asks the node service the health of its backends.
func (e *Endpoint) NodeGetStorageHealth(ctx context.Context) ([]*csi.NodeGetStorageHealthResponse_StorageBackendHealth, error) {
	resp, err := timed(ctx, e, "NodeGetStorageHealth", healthTimeout, e.node.NodeGetStorageHealth,
		&csi.NodeGetStorageHealthRequest{})
	if err != nil {
		return nil, err
	}
	return resp.GetBackendHealth(), nil
}
