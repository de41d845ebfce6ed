package csi

import (
	"context"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
)

// resizeTimeout bounds one ControllerExpandVolume or ControllerModifyVolume
// call: the external-resizer's --timeout default.
const resizeTimeout = 10 * time.Second

// ControllerExpandVolume grows a volume and returns the capacity the
// driver reports (0 if it reports none) and whether the node must expand
// the volume too.
func (e *Endpoint) ControllerExpandVolume(ctx context.Context, req *csi.ControllerExpandVolumeRequest) (capacity int64, nodeExpansionRequired bool, err error) {
	ctx, cancel := context.WithTimeout(ctx, resizeTimeout)
	defer cancel()
	start := time.Now()
	resp, err := e.controller.ControllerExpandVolume(ctx, req)
	e.metrics.observe(e.Info.Driver, "ControllerExpandVolume", err, start)
	if err != nil {
		return 0, false, err
	}
	return resp.GetCapacityBytes(), resp.GetNodeExpansionRequired(), nil
}

// ControllerModifyVolume applies mutable parameters (a
// VolumeAttributesClass's parameters) to a volume.
func (e *Endpoint) ControllerModifyVolume(ctx context.Context, req *csi.ControllerModifyVolumeRequest) error {
	ctx, cancel := context.WithTimeout(ctx, resizeTimeout)
	defer cancel()
	start := time.Now()
	_, err := e.controller.ControllerModifyVolume(ctx, req)
	e.metrics.observe(e.Info.Driver, "ControllerModifyVolume", err, start)
	return err
}
