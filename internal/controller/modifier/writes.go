package modifier

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/volplane/volplane/internal/claimstatus"
	"github.com/volplane/volplane/internal/modification"
)

// finish writes the PV's class first, then the claim's: a crash between
// the two leaves the claim InProgress, and the next sync asks the driver
// again (idempotent) and completes.
func (c *Controller) finish(ctx context.Context, key string, claim *v1.PersistentVolumeClaim, pv *v1.PersistentVolume, target string) error {
	if modification.VolumeWithClass(pv, target) != nil {
		if err := c.PatchVolume(ctx, pv.Name, map[string]any{"volumeAttributesClassName": target}); err != nil {
			return fmt.Errorf("update pv.Spec.VolumeAttributesClassName for PVC %q failed, errored with: %w", claim.Name, err)
		}
	}
	// The reference's final write goes without the resourceVersion check.
	_, err := c.WriteClaim(ctx, key, claim, modification.MarkModifyFinished(claim), claimstatus.Always)
	return err
}
