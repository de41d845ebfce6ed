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
	resp, err := timed(ctx, e, "ControllerExpandVolume", resizeTimeout, e.controller.ControllerExpandVolume, req)
	if err != nil {
		return 0, false, err
	}
	return resp.GetCapacityBytes(), resp.GetNodeExpansionRequired(), nil
}

// ControllerModifyVolume applies mutable parameters (a
// VolumeAttributesClass's parameters) to a volume.
func (e *Endpoint) ControllerModifyVolume(ctx context.Context, req *csi.ControllerModifyVolumeRequest) error {
	_, err := timed(ctx, e, "ControllerModifyVolume", resizeTimeout, e.controller.ControllerModifyVolume, req)
	return err
}
