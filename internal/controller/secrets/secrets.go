// Package secrets reads the Secrets a StorageClass or a PV names for the
// secrets field of a CSI call. It is the loops' only read of Secrets, kept
// out of internal/csi so that the CSI client speaks gRPC only.
package secrets

import (
	"context"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Read reads the data of the secret ref names, for the secrets field
// of a CSI call; nil without a reference. The secret is read live, one at
// a time, as the CSI sidecars and the kubelet read theirs: nothing of ours
// holds every Secret of the cluster in a cache. The error is the GET's,
// for the caller to put in the reference's words.
func Read(ctx context.Context, client kubernetes.Interface, ref *v1.SecretReference) (map[string]string, error) {
	if ref == nil {
		return nil, nil
	}
	s, err := client.CoreV1().Secrets(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(s.Data))
	for k, v := range s.Data {
		out[k] = string(v)
	}
	return out, nil
}
