package resizing

import (
	"context"
	"encoding/json"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/volplane/volplane/internal/claimstatus"
)

// WriteClaim patches the claim's status subresource from old to want, a
// pure step's answer, under pre (claimstatus.Patch), and returns the claim
// as the server has it; want nil writes nothing and returns old. On an
// error old is returned.
func WriteClaim(ctx context.Context, client kubernetes.Interface, old, want *v1.PersistentVolumeClaim, pre claimstatus.Precondition) (*v1.PersistentVolumeClaim, error) {
	if want == nil {
		return old, nil
	}
	patch, err := claimstatus.Patch(old, want, pre)
	if err != nil {
		return old, err
	}
	out, err := client.CoreV1().PersistentVolumeClaims(old.Namespace).Patch(ctx, old.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil {
		return old, err
	}
	return out, nil
}

// WriteClaim writes the claim's status as the package's WriteClaim does
// and remembers what the server returned, so the loop's next sync decides
// on it even before the informer has it.
func (b *Base) WriteClaim(ctx context.Context, key string, old, want *v1.PersistentVolumeClaim, pre claimstatus.Precondition) (*v1.PersistentVolumeClaim, error) {
	out, err := WriteClaim(ctx, b.Client, old, want, pre)
	if err != nil || want == nil {
		return out, err
	}
	return b.NewestClaim.Wrote(key, out), nil
}

// PatchVolume writes the given fields of the PV's spec (a strategic merge
// patch: nothing else changes) and remembers what the server returned.
func (b *Base) PatchVolume(ctx context.Context, name string, spec map[string]any) error {
	patch, err := json.Marshal(map[string]any{"spec": spec})
	if err != nil {
		return err
	}
	out, err := b.Client.CoreV1().PersistentVolumes().Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return err
	}
	b.NewestPV.Wrote(name, out)
	return nil
}
