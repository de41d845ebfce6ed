package attacher

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/volplane/volplane/internal/controller/secrets"
	"github.com/volplane/volplane/internal/csi"
	"github.com/volplane/volplane/internal/provisioning"
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
		ep, err = publishing.ForVolume(driver, asCSI(pv))
	} else {
		ep, err = publishing.ForDelete(driver, nil)
	}
	if err != nil {
		return nil, fmt.Errorf("no endpoint to attach through: %w", err)
	}
	return ep, nil
}

// asCSI is the PV as its driver sees it (a migrated in-tree PV translated,
// its node affinity on the driver's topology keys), or the PV as it is when
// it cannot be translated (its attachment is refused then anyway).
func asCSI(pv *v1.PersistentVolume) *v1.PersistentVolume {
	if out, err := provisioning.AsCSI(pv); err == nil {
		return out
	}
	return pv
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
