package attacher

import (
	"context"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	volumehelpers "k8s.io/component-helpers/storage/volume"

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
	var accessible func(map[string]string) bool
	if pv != nil && pv.Spec.NodeAffinity != nil && pv.Spec.NodeAffinity.Required != nil {
		accessible = accessibleVia(pv, c.pool.TopologyKeys(driver))
	}
	ep, err := csi.NewPool(eps...).ForDelete(driver, accessible)
	if err != nil {
		return nil, fmt.Errorf("no endpoint to attach through: %w", err)
	}
	return ep, nil
}

// accessibleVia tests an endpoint's topology against the PV's node
// affinity, keeping only the requirements on keys the driver reports: other
// keys cannot tell its endpoints apart. A term left without requirements is
// met everywhere. (The provisioner chooses its delete endpoint the same way.)
func accessibleVia(pv *v1.PersistentVolume, keys []string) func(map[string]string) bool {
	narrowed := pv.DeepCopy()
	var terms []v1.NodeSelectorTerm
	for _, t := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms {
		kept := slices.DeleteFunc(slices.Clone(t.MatchExpressions), func(r v1.NodeSelectorRequirement) bool {
			return !slices.Contains(keys, r.Key)
		})
		if len(kept) == 0 && len(t.MatchFields) == 0 {
			return func(map[string]string) bool { return true }
		}
		terms = append(terms, v1.NodeSelectorTerm{MatchExpressions: kept, MatchFields: t.MatchFields})
	}
	narrowed.Spec.NodeAffinity.Required.NodeSelectorTerms = terms
	return func(seg map[string]string) bool { return volumehelpers.CheckNodeAffinity(narrowed, seg) == nil }
}

// secrets reads the controllerPublishSecretRef live, as the reference does
// (no Secret informer: the attacher should not cache every Secret).
func (c *Controller) secrets(ctx context.Context, ref *v1.SecretReference) (map[string]string, error) {
	if ref == nil {
		return nil, nil
	}
	s, err := c.client.CoreV1().Secrets(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("failed to load secret \"%s/%s\": %w", ref.Namespace, ref.Name, err)
	}
	out := make(map[string]string, len(s.Data))
	for k, v := range s.Data {
		out[k] = string(v)
	}
	return out, nil
}
