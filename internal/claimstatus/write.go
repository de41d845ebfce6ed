// Package claimstatus writes a claim's status the way the external-resizer
// and the kubelet do: a strategic merge patch of the status subresource
// carrying only what a pure step changed (expansion.StatusPatch). The
// resizer, the modifier and the node agent all write claims through it.
package claimstatus

import (
	"context"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/volplane/volplane/internal/expansion"
)

// Write patches the claim's status from old to want, a step's answer, and
// returns the claim as the server has it; want nil writes nothing and
// returns old. With rvCheck the patch carries old's resourceVersion, so it
// fails with a conflict on a claim changed meanwhile. On an error old is
// returned.
func Write(ctx context.Context, client kubernetes.Interface, old, want *v1.PersistentVolumeClaim, rvCheck bool) (*v1.PersistentVolumeClaim, error) {
	if want == nil {
		return old, nil
	}
	patch, err := expansion.StatusPatch(old, want, rvCheck)
	if err != nil {
		return old, err
	}
	out, err := client.CoreV1().PersistentVolumeClaims(old.Namespace).Patch(ctx, old.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil {
		return old, err
	}
	return out, nil
}
