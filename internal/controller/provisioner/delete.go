package provisioner

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	volumehelpers "k8s.io/component-helpers/storage/volume"
	"k8s.io/klog/v2"

	"github.com/volplane/volplane/internal/csi"
)

func (c *Controller) syncVolume(ctx context.Context, name string) error {
	pv, err := c.pvs.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if _, ok := c.madePVs.Get(name); ok {
		pv = c.madePVs.Observe(name, pv)
	}
	action := decideVolume(pv, c.pool.Serves)
	logger := klog.FromContext(ctx).WithValues("pv", klog.KObj(pv))
	if action != volumeNone {
		logger.V(4).Info("Volume sync", "action", action)
	}
	ctx = klog.NewContext(ctx, logger)
	switch action {
	case volumeUnfinalize:
		return c.dropVolumeFinalizer(ctx, pv.Name, pv.UID)
	case volumeDelete:
		return c.deleteReleased(ctx, pv)
	}
	return nil
}

// deleteReleased reclaims a Released PV under Delete: the backend volume
// first (NotFound means already gone), then the PV object, then our
// finalizer, which is what lets the object go. A crash between the steps
// repeats the sync, every step of which is idempotent.
func (c *Controller) deleteReleased(ctx context.Context, pv *v1.PersistentVolume) error {
	driver := pv.Annotations[volumehelpers.AnnDynamicallyProvisioned]
	ep := c.pool.ForDelete(driver, accessibleFrom(pv))
	secrets, err := c.deletionSecrets(ctx, pv)
	if err != nil {
		c.event(pv, pv.UID, driver, v1.EventTypeWarning, reasonVolumeFailedDelete, "%v", err)
		return err
	}
	if err := ep.DeleteVolume(ctx, pv.Spec.CSI.VolumeHandle, secrets); err != nil && !csi.IsNotFound(err) {
		c.event(pv, pv.UID, driver, v1.EventTypeWarning, reasonVolumeFailedDelete, "%v", err)
		return fmt.Errorf("delete volume %s: %w", pv.Spec.CSI.VolumeHandle, err)
	}
	if pv.DeletionTimestamp == nil {
		uid := pv.UID
		err := c.client.CoreV1().PersistentVolumes().Delete(ctx, pv.Name,
			metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			return nil // gone, or replaced by a PV of the same name that is not this one
		}
		if err != nil {
			return fmt.Errorf("delete PV: %w", err)
		}
	}
	klog.FromContext(ctx).V(2).Info("Deleted released volume", "driver", driver, "handle", pv.Spec.CSI.VolumeHandle)
	return c.dropVolumeFinalizer(ctx, pv.Name, pv.UID)
}

// dropVolumeFinalizer removes our finalizer from the live PV (the delete
// above changed it, so the cached copy would conflict).
func (c *Controller) dropVolumeFinalizer(ctx context.Context, name string, uid types.UID) error {
	live, err := c.client.CoreV1().PersistentVolumes().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("get PV: %w", err)
	}
	if live.UID != uid || !hasFinalizer(live.Finalizers, VolumeFinalizer) {
		return nil
	}
	live.Finalizers = without(live.Finalizers, VolumeFinalizer)
	out, err := c.client.CoreV1().PersistentVolumes().Update(ctx, live, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove finalizer: %w", err)
	}
	c.madePVs.Observe(out.Name, out)
	return nil
}
