package provisioner

import (
	"context"
	"fmt"

	"github.com/volplane/volplane/internal/controller/secrets"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	name, hasName := pv.Annotations[annDeletionSecretName]
	ns, hasNamespace := pv.Annotations[annDeletionSecretNamespace]
	var ref *v1.SecretReference
	switch {
	case hasName && hasNamespace:
		if name == "" || ns == "" {
			return nil, nil
		}
		ref = &v1.SecretReference{Name: name, Namespace: ns}
	case pv.Spec.StorageClassName == "" || pv.Spec.ClaimRef == nil:
		return nil, nil
	default:
		class, err := c.classes.Get(pv.Spec.StorageClassName)
		if err != nil {
			logger.Info("No StorageClass to find deletion secrets in; deleting without", "class", pv.Spec.StorageClassName, "err", err)
			return nil, nil
		}
		claim := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: pv.Spec.ClaimRef.Name, Namespace: pv.Spec.ClaimRef.Namespace}}
		if ref, err = secretRef(provisionerSecret, class.Parameters, pv.Name, claim); err != nil {
			return nil, fmt.Errorf("failed to get secretreference for volume %s: %v", pv.Name, err)
		}
	}
	creds, err := c.credentials(ctx, ref)
	if err != nil {
		logger.Info("Deleting without the provisioner secret, which cannot be read", "err", err)
		return nil, nil
	}
	return creds, nil
}
