package protection

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/volplane/volplane/internal/binding"
	"github.com/volplane/volplane/internal/protection"
)

// write makes the claim's decided changes: the Unused condition first (as
// the reference does), then the finalizer.
func (c *ClaimLoop) write(ctx context.Context, w write) error {
	if w.unused != nil {
		if err := c.writeUnused(ctx, w.claim, *w.unused); err != nil {
			return err
		}
	}
	if a := w.decision.Action; a != protection.AddFinalizer && a != protection.RemoveFinalizer {
		return nil
	}
	return c.writeFinalizer(ctx, w)
}

// writeUnused writes the claim's Unused condition with a full status
// update, as the reference does: the decision rests on the condition read,
// so a claim changed since is refused (a conflict) and decided again.
func (c *ClaimLoop) writeUnused(ctx context.Context, claim *v1.PersistentVolumeClaim, cond v1.PersistentVolumeClaimCondition) error {
	out, err := c.client.CoreV1().PersistentVolumeClaims(claim.Namespace).UpdateStatus(ctx,
		protection.WithUnused(claim, cond), metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("updating Unused condition of PVC %s/%s: %w", claim.Namespace, claim.Name, err)
	}
	c.newest.Wrote(binding.ClaimKey(claim), out)
	klog.FromContext(ctx).V(3).Info("Updated Unused condition in PVC status", "pvc", klog.KObj(claim), "status", cond.Status)
	return nil
}

// writeFinalizer makes the claim's decided finalizer change.
func (c *ClaimLoop) writeFinalizer(ctx context.Context, w write) error {
	logger := klog.FromContext(ctx)
	claim, remove := w.claim, w.decision.Action == protection.RemoveFinalizer
	patch := binding.FinalizerPatch(claim.UID, "", claim.Finalizers, protection.ClaimFinalizer, remove)
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

// writeVolume makes the volume's decided finalizer change with a patch
// on the condition that the volume is still the version the decision was
// made on (its resourceVersion), as the reference's full update: a volume
// bound since is refused (a conflict) and decided again. The patch writes
// nothing else, so the provisioner removing its own finalizer meanwhile
// is kept, and a field the cache leaves out is not erased.
func (l *VolumeLoop) writeVolume(ctx context.Context, pv *v1.PersistentVolume, d protection.Decision) error {
	remove := d.Action == protection.RemoveFinalizer
	patch := binding.FinalizerPatch(pv.UID, pv.ResourceVersion, pv.Finalizers, protection.VolumeFinalizer, remove)
	out, err := l.client.CoreV1().PersistentVolumes().Patch(ctx, pv.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	switch {
	case remove && apierrors.IsNotFound(err):
		return nil // gone already
	case err != nil:
		return fmt.Errorf("%s on PV %s: %w", d.Action, pv.Name, err)
	}
	l.newest.Wrote(pv.Name, out)
	klog.FromContext(ctx).V(3).Info("Protection finalizer of PV changed", "pv", klog.KObj(pv), "action", d.Action.String(), "reason", d.Reason)
	return nil
}

// finalized is an API object that copies itself.
type finalized[T any] interface {
	metav1.Object
	DeepCopy() T
}

// updateFinalizer makes the decided change of finalizer f (added last, or
// removed) with a full Update of a copy of obj, the object the decision
// was made on: its resourceVersion makes the API server refuse the write
// if the object changed since, as the reference's full updates do. A
// removal from an object gone already is done: gone is true then. kind
// names the object in the error.
func updateFinalizer[T finalized[T]](ctx context.Context, obj T, f string, d protection.Decision, kind string,
	update func(context.Context, T, metav1.UpdateOptions) (T, error)) (out T, gone bool, err error) {
	upd := obj.DeepCopy()
	if d.Action == protection.RemoveFinalizer {
		fs, _ := binding.WithoutFinalizer(upd.GetFinalizers(), f)
		upd.SetFinalizers(fs)
	} else {
		upd.SetFinalizers(append(upd.GetFinalizers(), f))
	}
	out, err = update(ctx, upd, metav1.UpdateOptions{})
	switch {
	case d.Action == protection.RemoveFinalizer && apierrors.IsNotFound(err):
		return out, true, nil
	case err != nil:
		return out, false, fmt.Errorf("%s on %s %s: %w", d.Action, kind, obj.GetName(), err)
	}
	return out, false, nil
}
