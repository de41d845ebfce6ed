package resizer

import (
	"context"
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/volplane/volplane/internal/claimstatus"
	"github.com/volplane/volplane/internal/expansion"
)

// writeClaim patches the claim's status subresource from old to want (a
// step's answer; nil writes nothing) and returns the claim as written. With
// rvCheck the patch carries old's resourceVersion, so it fails with a
// conflict on a claim changed meanwhile (the reference checks all but the
// failure marks, which must land whatever changed).
func (c *Controller) writeClaim(ctx context.Context, key string, old, want *v1.PersistentVolumeClaim, rvCheck bool) (*v1.PersistentVolumeClaim, error) {
	out, err := claimstatus.Write(ctx, c.client, old, want, rvCheck)
	if err != nil || want == nil {
		return out, err
	}
	return c.newestClaim.Wrote(key, out), nil
}

// growVolume writes the PV's new capacity, unless it has as much already.
func (c *Controller) growVolume(ctx context.Context, pv *v1.PersistentVolume, capacity resource.Quantity) error {
	if expansion.GrowVolume(pv, capacity) == nil {
		return nil
	}
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"capacity": map[string]any{"storage": capacity.String()}}})
	if err != nil {
		return err
	}
	out, err := c.client.CoreV1().PersistentVolumes().Patch(ctx, pv.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return fmt.Errorf("update capacity of PV %s failed: %w", pv.Name, err)
	}
	c.newestPV.Wrote(pv.Name, out)
	return nil
}
