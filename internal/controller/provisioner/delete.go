package provisioner

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/volplane/volplane/internal/controller/loop"
	"github.com/volplane/volplane/internal/csierror"
	"github.com/volplane/volplane/internal/provisioning"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/volplane/volplane/internal/binding"
	"github.com/volplane/volplane/internal/csi"
)

func (c *Controller) syncVolume(ctx context.Context, name string) (loop.Result, error) {
	pv, err := c.read.pvs.Get(name)
	if apierrors.IsNotFound(err) {
		return loop.Done(), nil
	}
	if err != nil {
		return loop.Done(), err
	}
	pv = c.memory.madePVs.Observe(name, pv)
	action, why := c.volumeActionOf(pv)
	logger := klog.FromContext(ctx).WithValues("pv", klog.KObj(pv))
	if action != provisioning.VolumeNone {
		logger.V(4).Info("Volume sync", "action", action)
	}
	if why != "" {
		logger.V(5).Info("Not this node's volume", "node", c.node.NodeName, "reason", why.Message())
	}
	ctx = klog.NewContext(ctx, logger)
	switch action {
	case provisioning.VolumeUnfinalize:
		return loop.Done(), c.dropVolumeFinalizer(ctx, pv.Name, pv.UID)
	case provisioning.VolumeFinalize:
		return loop.Done(), c.addVolumeFinalizer(ctx, pv)
	case provisioning.VolumeDelete:
		return loop.Done(), c.deleteReleasedVolume(ctx, pv)
	}
	return loop.Done(), nil
}

// deleteReleased reclaims a Released CSI PV under Delete: the backend volume
// first (NotFound means already gone), then our finalizer, then the PV
// object. A crash between the steps
// repeats the sync, every step of which is idempotent.
//
// The decision was made on the informer's copy; the live PV is read again
// right before anything is deleted, so an administrator who switched the
// PV to Retain a moment ago keeps the data.
func (c *Controller) deleteReleased(ctx context.Context, pv *v1.PersistentVolume) error {
	if ok, err := c.stillToDelete(ctx, pv); !ok || err != nil {
		return err
	}
	// The driver of the CSI form: a migrated in-tree PV was translated
	// before it got here, and its provisioned-by names the in-tree plugin.
	driver := pv.Spec.CSI.Driver
	ep, err := c.deleteEndpoint(pv, driver)
	if err != nil {
		c.event(pv, pv.UID, driver, v1.EventTypeWarning, provisioning.EventVolumeFailedDelete, "%v", err)
		return err
	}
	secrets, err := c.deletionSecrets(ctx, pv)
	if err != nil {
		c.event(pv, pv.UID, driver, v1.EventTypeWarning, provisioning.EventVolumeFailedDelete, "%v", err)
		return err
	}
	if err := ep.DeleteVolume(ctx, pv.Spec.CSI.VolumeHandle, secrets); err != nil && !csierror.NotFound(err) {
		c.event(pv, pv.UID, driver, v1.EventTypeWarning, provisioning.EventVolumeFailedDelete, "%v", err)
		return fmt.Errorf("delete volume %s: %w", pv.Spec.CSI.VolumeHandle, err)
	}
	c.deleted(ep)
	// Our finalizer goes before the PV is deleted (the reference removes
	// it after): pv-protection removes its own finalizer as soon as it sees
	// the deletion, with a write conditioned on the version it saw, and
	// ours going at that moment refused it every time (a conflict and a
	// retry per PV). A crash between the two leaves a Released PV under
	// Delete that is not being deleted: decided again, its backend volume
	// is NotFound, and it is deleted then.
	if slices.Contains(pv.Finalizers, provisioning.VolumeFinalizer) {
		if err := c.dropVolumeFinalizer(ctx, pv.Name, pv.UID); err != nil {
			return err
		}
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
	klog.FromContext(ctx).V(2).Info("Deleted released volume", "driver", driver, "handle", pv.Spec.CSI.VolumeHandle, "node", ep.Info.NodeID)
	return nil
}

// stillToDelete reads the PV from the API server and says whether it must
// still be deleted (if not, the informer will bring the change). The
// decision goes on with the object it was made from: the live one only
// confirms it.
func (c *Controller) stillToDelete(ctx context.Context, cached *v1.PersistentVolume) (bool, error) {
	live, err := c.client.CoreV1().PersistentVolumes().Get(ctx, cached.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("get PV: %w", err)
	}
	if why := provisioning.WhyNotDelete(cached, live); why != "" {
		klog.FromContext(ctx).V(2).Info("Not deleting the volume after all", "reason", why)
		return false, nil
	}
	return true, nil
}

// deleteEndpoint is the endpoint to delete pv's volume through, or why
// there is none yet: still attached, or its node's driver is not served.
func (c *Controller) deleteEndpoint(pv *v1.PersistentVolume, driver string) (*csi.Endpoint, error) {
	info, _ := c.pool.Info(driver)
	vas, err := c.attachmentsOf(pv.Name)
	if err != nil {
		return nil, err
	}
	if err := provisioning.AttachmentBlocks(pv.Name, info.Publish, vas); err != nil {
		return nil, err
	}
	ep, err := c.pool.ForVolume(driver, pv)
	if errors.Is(err, csi.ErrAffinityNotOnDriverKeys) {
		return nil, fmt.Errorf("cannot delete volume %s: %w; its node affinity (%s) cannot tell which instance holds it, and another would answer for an ID it never made; delete the volume on the backend, then remove the finalizer %s from the PV",
			pv.Spec.CSI.VolumeHandle, err, provisioning.DescribeAffinity(pv), provisioning.VolumeFinalizer)
	}
	if err != nil {
		return nil, fmt.Errorf("cannot delete volume %s yet: %w; the volume is accessible from %s; waiting until the driver there is served",
			pv.Spec.CSI.VolumeHandle, err, provisioning.DescribeAffinity(pv))
	}
	return ep, nil
}

// addVolumeFinalizer puts our finalizer back on a PV decided from the
// informer's copy; the patch carries that copy's resourceVersion, so a PV
// changed since (switched to Retain again, say) conflicts and is decided
// again.
func (c *Controller) addVolumeFinalizer(ctx context.Context, pv *v1.PersistentVolume) error {
	patch := binding.FinalizerPatch(pv.UID, pv.ResourceVersion, pv.Finalizers, provisioning.VolumeFinalizer, false)
	out, err := c.client.CoreV1().PersistentVolumes().Patch(ctx, pv.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("add finalizer: %w", err)
	}
	klog.FromContext(ctx).V(2).Info("Finalizer back on a PV under Delete")
	if _, ok := c.memory.madePVs.Get(out.Name); ok {
		c.memory.madePVs.Wrote(out.Name, out)
	}
	return nil
}

// dropVolumeFinalizer removes our finalizer from the PV once its volume is
// deleted on the backend: a patch that removes that finalizer alone, with
// no read first and no resourceVersion (nothing else of the PV matters
// now), so it never conflicts with pv-protection removing its own at the
// same moment. A PV gone, or re-created under the name (its UID differs:
// Conflict), has nothing of ours left to remove.
func (c *Controller) dropVolumeFinalizer(ctx context.Context, name string, uid types.UID) error {
	patch := binding.FinalizerPatch(uid, "", nil, provisioning.VolumeFinalizer, true)
	out, err := c.client.CoreV1().PersistentVolumes().Patch(ctx, name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove finalizer: %w", err)
	}
	c.memory.madePVs.Wrote(out.Name, out)
	return nil
}
