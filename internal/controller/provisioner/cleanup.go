package provisioner

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/volplane/volplane/internal/csi"
)

// cleanup runs for a claim with our finalizer that no longer wants a volume
// (deleted, or bound to another PV) and has no PV: a backend volume may
// exist. CreateVolume with the same request returns it if it does (or makes
// it), DeleteVolume removes it; only then does the finalizer go.
func (c *Controller) cleanup(ctx context.Context, claim *v1.PersistentVolumeClaim, class *storagev1.StorageClass) error {
	// The lister may lag behind a PV create: ask the API server before
	// deleting anything a PV may own.
	_, err := c.client.CoreV1().PersistentVolumes().Get(ctx, volumeName(claim), metav1.GetOptions{})
	switch {
	case err == nil:
		_, err := c.dropFinalizer(ctx, claim)
		return err
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("get PV %s: %w", volumeName(claim), err)
	}
	driver := claimDriver(claim)
	if err := c.deleteBackend(ctx, claim, class, driver); err != nil {
		c.event(claim, claim.UID, driver, v1.EventTypeWarning, reasonCleanupFailed,
			"failed to delete the volume that may have been provisioned for the claim: %v", err)
		return err
	}
	klog.FromContext(ctx).V(2).Info("Cleaned up the backend volume of a claim that went away", "driver", driver)
	_, err = c.dropFinalizer(ctx, claim)
	return err
}

func (c *Controller) deleteBackend(ctx context.Context, claim *v1.PersistentVolumeClaim, class *storagev1.StorageClass, driver string) error {
	if class == nil {
		return errors.New("the claim's StorageClass does not exist, so the request that made the volume cannot be rebuilt")
	}
	// The same request as the attempt that may have made the volume; without
	// the clone source only if that cannot be resolved any more.
	p, err := c.plan(ctx, claim, class, driver, forCleanup)
	if err != nil {
		if p, err = c.plan(ctx, claim, class, driver, forCleanupWithoutSource); err != nil {
			return err
		}
	}
	// Asked as provisioning asks (create): a ResourceExhausted answer from
	// a driver that made the volume anyway is confirmed before it counts.
	vol, err := create(ctx, p)
	if csi.IsFinal(err) && status.Code(err) != codes.AlreadyExists {
		// A final answer other than AlreadyExists (a volume of that name
		// made from another request) means the driver holds no such volume.
		klog.FromContext(ctx).V(2).Info("No backend volume to clean up", "err", err)
		return nil
	}
	if err != nil {
		return err
	}
	if err := p.endpoint.DeleteVolume(ctx, vol.GetVolumeId(), p.request.Secrets); err != nil && !csi.IsNotFound(err) {
		return err
	}
	return nil
}
