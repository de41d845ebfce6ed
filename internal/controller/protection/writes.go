package protection

import (
	"context"
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/volplane/volplane/internal/binding"
	"github.com/volplane/volplane/internal/protection"
)

// finalizerPatch is a strategic-merge patch that adds (AddFinalizer) or
// deletes (RemoveFinalizer) one finalizer of the object with the given UID.
// finalizers is a merge list: other finalizers are left alone. The UID is
// immutable, so the patch fails on an object re-created under the same
// name.
func finalizerPatch(uid types.UID, finalizer string, action protection.Action) []byte {
	meta := map[string]any{"uid": uid}
	if action == protection.RemoveFinalizer {
		meta["$deleteFromPrimitiveList/finalizers"] = []string{finalizer}
	} else {
		meta["finalizers"] = []string{finalizer}
	}
	out, _ := json.Marshal(map[string]any{"metadata": meta}) // maps of strings always marshal
	return out
}

// write makes the claim's decided finalizer change.
func (c *ClaimLoop) write(ctx context.Context, w write) error {
	logger := klog.FromContext(ctx)
	claim, remove := w.claim, w.decision.Action == protection.RemoveFinalizer
	patch := finalizerPatch(claim.UID, protection.ClaimFinalizer, w.decision.Action)
	out, err := c.client.CoreV1().PersistentVolumeClaims(claim.Namespace).Patch(ctx, claim.Name,
		types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	switch {
	case remove && apierrors.IsNotFound(err):
		return nil // gone already
	case err != nil && remove:
		return fmt.Errorf("removing protection finalizer from PVC %s/%s: %w", claim.Namespace, claim.Name, err)
	case err != nil:
		return fmt.Errorf("adding protection finalizer to PVC %s/%s: %w", claim.Namespace, claim.Name, err)
	}
	c.newest.Wrote(binding.ClaimKey(claim), out)
	if remove {
		logger.V(3).Info("Removed protection finalizer from PVC", "pvc", klog.KObj(claim), "reason", w.decision.Reason)
	} else {
		logger.V(3).Info("Added protection finalizer to PVC", "pvc", klog.KObj(claim))
	}
	return nil
}

// writeVolume makes the volume's decided finalizer change with a full
// Update from the copy the decision was made on.
func (l *VolumeLoop) writeVolume(ctx context.Context, pv *v1.PersistentVolume, d protection.Decision) error {
	upd := pv.DeepCopy()
	if d.Action == protection.RemoveFinalizer {
		upd.Finalizers, _ = binding.WithoutFinalizer(upd.Finalizers, protection.VolumeFinalizer)
	} else {
		upd.Finalizers = append(upd.Finalizers, protection.VolumeFinalizer)
	}
	out, err := l.client.CoreV1().PersistentVolumes().Update(ctx, upd, metav1.UpdateOptions{})
	logger := klog.FromContext(ctx)
	switch {
	case d.Action == protection.RemoveFinalizer && apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("%s on PV %s: %w", d.Action, pv.Name, err)
	}
	l.newest.Wrote(pv.Name, out)
	logger.V(3).Info("Protection finalizer of PV changed", "pv", klog.KObj(pv), "action", d.Action.String(), "reason", d.Reason)
	return nil
}
