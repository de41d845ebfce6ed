package provisioner

import (
	"context"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	volumehelpers "k8s.io/component-helpers/storage/volume"

	"github.com/volplane/volplane/internal/binding"
	"github.com/volplane/volplane/internal/provisioning"
)

// driverClass is provisioning.CSIClass for a claim being provisioned or
// cleaned up; a class that cannot be translated fails the provisioning
// (the external-provisioner's prepareProvision), and is retried.
func (c *Controller) driverClass(claim *v1.PersistentVolumeClaim, class *storagev1.StorageClass) (*storagev1.StorageClass, error) {
	out, err := provisioning.CSIClass(class, provisioning.ClaimDriver(claim))
	if err != nil {
		c.event(claim, claim.UID, provisioning.ClaimDriver(claim), v1.EventTypeWarning, provisioning.EventFailed,
			"failed to provision volume with StorageClass %q: %v", class.Name, err)
	}
	return out, err
}

// deleteReleasedVolume is deleteReleased for any PV of ours, in-tree ones
// translated first, as the external-provisioner's Delete does.
func (c *Controller) deleteReleasedVolume(ctx context.Context, pv *v1.PersistentVolume) error {
	csiPV, err := provisioning.AsCSI(pv)
	if err != nil {
		driver := binding.MigratedDriver(pv.Annotations[volumehelpers.AnnDynamicallyProvisioned])
		c.event(pv, pv.UID, driver, v1.EventTypeWarning, provisioning.EventVolumeFailedDelete, "%v", err)
		return err
	}
	return c.deleteReleased(ctx, csiPV)
}
