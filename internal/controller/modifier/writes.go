package modifier

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/volplane/volplane/internal/controller/secrets"

	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/volplane/volplane/internal/claimstatus"
	"github.com/volplane/volplane/internal/modification"
)

// Annotations on a PV naming its controller-modify secret (the
// provisioner records them from the class); without them the
// controller-expand secret is used, as the reference does.
const (
	annModifySecretName      = "volume.kubernetes.io/controller-modify-secret-name"
	annModifySecretNamespace = "volume.kubernetes.io/controller-modify-secret-namespace"
)

// writeClaim patches the claim's status subresource from old to want (a
// step's answer; nil writes nothing) and returns the claim as written. With
// rvCheck the patch carries old's resourceVersion, so it fails with a
// conflict on a claim changed meanwhile (as the reference's marks; its
// final write and its cancel go without).
func (c *Controller) writeClaim(ctx context.Context, key string, old, want *v1.PersistentVolumeClaim, rvCheck bool) (*v1.PersistentVolumeClaim, error) {
	out, err := claimstatus.Write(ctx, c.client, old, want, rvCheck)
	if err != nil || want == nil {
		return out, err
	}
	return c.newestClaim.Wrote(key, out), nil
}

// finish writes the PV's class first, then the claim's: a crash between
// the two leaves the claim InProgress, and the next sync asks the driver
// again (idempotent) and completes.
func (c *Controller) finish(ctx context.Context, key string, claim *v1.PersistentVolumeClaim, pv *v1.PersistentVolume, target string) error {
	if modification.VolumeWithClass(pv, target) != nil {
		patch, err := json.Marshal(map[string]any{"spec": map[string]any{"volumeAttributesClassName": target}})
		if err != nil {
			return err
		}
		out, err := c.client.CoreV1().PersistentVolumes().Patch(ctx, pv.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
		if err != nil {
			return fmt.Errorf("update pv.Spec.VolumeAttributesClassName for PVC %q failed, errored with: %w", claim.Name, err)
		}
		c.newestPV.Wrote(pv.Name, out)
	}
	_, err := c.writeClaim(ctx, key, claim, modification.MarkModifyFinished(claim), false)
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
	out, err := secrets.Read(ctx, c.client, &v1.SecretReference{Name: name, Namespace: ns})
	if err != nil {
		return nil, fmt.Errorf("error getting secret %s in namespace %s: %w", name, ns, err)
	}
	return out, nil
}

// event records through the driver's recorder (none: no event).
func (c *Controller) event(driver string, claim *v1.PersistentVolumeClaim, eventType, reason, msg string) {
	if r := c.recorders[driver]; r != nil {
		r.Event(claim, eventType, reason, msg)
	}
}

func grpcStatus(err error) (*status.Status, bool) { return status.FromError(err) }
