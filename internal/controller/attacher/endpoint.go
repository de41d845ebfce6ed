package attacher

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/volplane/volplane/internal/controller/secrets"
	"github.com/volplane/volplane/internal/csi"
)

// endpoint is the driver endpoint to publish through: among those with
// PUBLISH_UNPUBLISH_VOLUME, the one that holds the volume, chosen as for a
// delete (csi.Pool.ForDelete): a central driver has one; a node-local
// driver with an endpoint per node has the one the PV's node affinity
// points at.
func (c *Controller) endpoint(driver string, pv *v1.PersistentVolume) (*csi.Endpoint, error) {
	var eps []*csi.Endpoint
	for _, e := range c.pool.Endpoints(driver) {
		if e.Info.Publish {
			eps = append(eps, e)
		}
	}
	publishing := csi.NewPool(eps...)
	var (
		ep  *csi.Endpoint
		err error
	)
	if pv != nil {
		ep, err = publishing.ForVolume(driver, pv)
	} else {
		ep, err = publishing.ForDelete(driver, nil)
	}
	if err != nil {
		return nil, fmt.Errorf("no endpoint to attach through: %w", err)
	}
	return ep, nil
}

// secrets reads the controllerPublishSecretRef live, as the reference does
// (no Secret informer: the attacher should not cache every Secret).
func (c *Controller) secrets(ctx context.Context, ref *v1.SecretReference) (map[string]string, error) {
	out, err := secrets.Read(ctx, c.client, ref)
	if err != nil {
		return nil, fmt.Errorf("failed to load secret \"%s/%s\": %w", ref.Namespace, ref.Name, err)
	}
	return out, nil
}
