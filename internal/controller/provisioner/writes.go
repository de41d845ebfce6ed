package provisioner

import (
	"context"
	"fmt"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/internal/binding"
	"github.com/volplane/volplane/internal/provisioning"
)

// Every claim write is an Update carrying the resourceVersion we decided
// from: a stale copy conflicts and is retried from a newer one, so we never
// act on a claim older than one we wrote.

func (c *Controller) updateClaim(ctx context.Context, upd *v1.PersistentVolumeClaim) (*v1.PersistentVolumeClaim, error) {
	out, err := c.client.CoreV1().PersistentVolumeClaims(upd.Namespace).Update(ctx, upd, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("update claim %s/%s: %w", upd.Namespace, upd.Name, err)
	}
	return c.memory.newClaim.Wrote(binding.ClaimKey(out), out), nil
}

// addFinalizer persists that a backend volume may exist from now on, which
// endpoint may hold it, and the request that may make it
// (provisioning.MarkInProgress).
func (c *Controller) addFinalizer(ctx context.Context, claim *v1.PersistentVolumeClaim, node string, req *csipb.CreateVolumeRequest) (*v1.PersistentVolumeClaim, error) {
	upd, err := provisioning.MarkInProgress(claim, node, req)
	if err != nil || upd == nil {
		return claim, err
	}
	return c.updateClaim(ctx, upd)
}

// repin moves the endpoint pin to node: only after the pinned endpoint
// answered that it made nothing.
func (c *Controller) repin(ctx context.Context, claim *v1.PersistentVolumeClaim, node string) (*v1.PersistentVolumeClaim, error) {
	if claim.Annotations[provisioning.AnnEndpointNode] == node {
		return claim, nil
	}
	upd := claim.DeepCopy()
	if upd.Annotations == nil {
		upd.Annotations = map[string]string{}
	}
	upd.Annotations[provisioning.AnnEndpointNode] = node
	return c.updateClaim(ctx, upd)
}

// dropFinalizer says no backend volume can exist without a PV any more:
// the finalizer and the endpoint pin go together.
func (c *Controller) dropFinalizer(ctx context.Context, claim *v1.PersistentVolumeClaim) (*v1.PersistentVolumeClaim, error) {
	if !provisioning.MarkedInProgress(claim) {
		return claim, nil
	}
	upd := claim.DeepCopy()
	provisioning.Unpin(upd)
	out, err := c.updateClaim(ctx, upd)
	if apierrors.IsNotFound(err) {
		return claim, nil // the claim went away once our finalizer was its last
	}
	return out, err
}

// createVolume creates the PV; one that exists already for this claim (an
// earlier attempt's) is fine, one for another claim is a final error.
func (c *Controller) createVolume(ctx context.Context, claim *v1.PersistentVolumeClaim, pv *v1.PersistentVolume) error {
	out, err := c.client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
	if err == nil {
		c.memory.madePVs.Wrote(out.Name, out)
		return nil
	}
	if !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create PV %s: %w", pv.Name, err)
	}
	have, err := c.client.CoreV1().PersistentVolumes().Get(ctx, pv.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("get existing PV %s: %w", pv.Name, err)
	}
	if ref := have.Spec.ClaimRef; ref == nil || ref.UID != claim.UID {
		return provisioning.Final(fmt.Errorf("PV %s exists and was not made for this claim", pv.Name))
	}
	c.memory.madePVs.Wrote(have.Name, have)
	return nil
}
