package resizer

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/volplane/volplane/internal/expansion"
)

// growVolume writes the PV's new capacity, unless it has as much already.
func (c *Controller) growVolume(ctx context.Context, pv *v1.PersistentVolume, capacity resource.Quantity) error {
	if expansion.GrowVolume(pv, capacity) == nil {
		return nil
	}
	if err := c.PatchVolume(ctx, pv.Name, map[string]any{"capacity": map[string]any{"storage": capacity.String()}}); err != nil {
		return fmt.Errorf("update capacity of PV %s failed: %w", pv.Name, err)
	}
	return nil
}
