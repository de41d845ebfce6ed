package modification

import v1 "k8s.io/api/core/v1"

// Annotations on a PV naming its controller-modify secret (the
// provisioner records them from the class).
const (
	AnnModifySecretName      = "volume.kubernetes.io/controller-modify-secret-name"
	AnnModifySecretNamespace = "volume.kubernetes.io/controller-modify-secret-namespace"
)

// SecretRef is the secret ControllerModifyVolume is given for pv: the
// controller-modify secret its annotations name, else its
// controllerExpandSecretRef, as the reference does; nil for none.
func SecretRef(pv *v1.PersistentVolume) *v1.SecretReference {
	name, ns := pv.Annotations[AnnModifySecretName], pv.Annotations[AnnModifySecretNamespace]
	if name != "" && ns != "" {
		return &v1.SecretReference{Name: name, Namespace: ns}
	}
	if pv.Spec.CSI == nil {
		return nil
	}
	return pv.Spec.CSI.ControllerExpandSecretRef
}
