package provisioner

import (
	"context"
	"fmt"

	"github.com/volplane/volplane/internal/controller/secrets"
	"github.com/volplane/volplane/internal/provisioning"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// credentials reads the data of a referenced secret (nil for no
// reference). Secrets are read one at a time from the API server, never
// cached: the provisioner has no business holding every secret of the
// cluster in memory.
func (c *Controller) credentials(ctx context.Context, ref *v1.SecretReference) (map[string]string, error) {
	out, err := secrets.Read(ctx, c.client, ref)
	if err != nil {
		return nil, fmt.Errorf("error getting secret %s in namespace %s: %v", ref.Name, ref.Namespace, err)
	}
	return out, nil
}

// deletionSecrets are the provisioner secret's data for DeleteVolume of a
// PV, found as the external-provisioner finds them (handleSecretsForDeletion):
// from the PV's deletion annotations when it has both (empty: no secret),
// else from its class, resolved for the claim it names. A secret that
// cannot be read any more (deleted with its namespace, say) does not block
// the deletion: the call goes without it, and the driver decides. Only a
// class whose templates cannot be resolved is an error.
func (c *Controller) deletionSecrets(ctx context.Context, pv *v1.PersistentVolume) (map[string]string, error) {
	logger := klog.FromContext(ctx)
	ref, recorded := provisioning.RecordedDeletionSecret(pv)
	switch {
	case recorded && ref == nil:
		return nil, nil
	case !recorded && (pv.Spec.StorageClassName == "" || pv.Spec.ClaimRef == nil):
		return nil, nil
	case !recorded:
		class, err := c.read.classes.Get(pv.Spec.StorageClassName)
		if err != nil {
			logger.Info("No StorageClass to find deletion secrets in; deleting without", "class", pv.Spec.StorageClassName, "err", err)
			return nil, nil
		}
		if ref, err = provisioning.ClassDeletionSecret(pv, class); err != nil {
			return nil, err
		}
	}
	creds, err := c.credentials(ctx, ref)
	if err != nil {
		logger.Info("Deleting without the provisioner secret, which cannot be read", "err", err)
		return nil, nil
	}
	return creds, nil
}
