package modifier

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/volplane/volplane/internal/claimstatus"
	"github.com/volplane/volplane/internal/controller/secrets"
	"github.com/volplane/volplane/internal/modification"
)

// Annotations on a PV naming its controller-modify secret (the
// provisioner records them from the class); without them the
// controller-expand secret is used, as the reference does.
const (
	annModifySecretName      = "volume.kubernetes.io/controller-modify-secret-name"
	annModifySecretNamespace = "volume.kubernetes.io/controller-modify-secret-namespace"
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

// secrets reads the modify secret of the PV (nil if it names none).
func (c *Controller) secrets(ctx context.Context, pv *v1.PersistentVolume) (map[string]string, error) {
	name, ns := pv.Annotations[annModifySecretName], pv.Annotations[annModifySecretNamespace]
	if name == "" || ns == "" {
		ref := pv.Spec.CSI.ControllerExpandSecretRef
		if ref == nil {
			return nil, nil
		}
		name, ns = ref.Name, ref.Namespace
	}
	out, err := secrets.Read(ctx, c.Client, &v1.SecretReference{Name: name, Namespace: ns})
	if err != nil {
		return nil, fmt.Errorf("error getting secret %s in namespace %s: %w", name, ns, err)
	}
	return out, nil
}
