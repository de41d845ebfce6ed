package csi

import (
	"context"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
)

// capacityTimeout is the external-provisioner's --timeout (10s), which
// bounds its capacity queries.
const capacityTimeout = 10 * time.Second

// GetCapacity asks the driver what it can still hand out for a class's
// parameters on a segment (nil: no topology), without volume capabilities,
// as the external-provisioner's capacity controller asks.
func (e *Endpoint) GetCapacity(ctx context.Context, parameters, segment map[string]string) (*csi.GetCapacityResponse, error) {
	req := &csi.GetCapacityRequest{Parameters: parameters}
	if segment != nil {
		req.AccessibleTopology = &csi.Topology{Segments: segment}
	}
	return timed(ctx, e, "GetCapacity", capacityTimeout, e.controller.GetCapacity, req)
}
