package provisioner

import (
	"context"
	"fmt"
	"strconv"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/internal/binding"
)

// Every claim write is an Update carrying the resourceVersion we decided
// from: a stale copy conflicts and is retried from a newer one, so we never
// act on a claim older than one we wrote.

func (c *Controller) updateClaim(ctx context.Context, upd *v1.PersistentVolumeClaim) (*v1.PersistentVolumeClaim, error) {
	out, err := c.client.CoreV1().PersistentVolumeClaims(upd.Namespace).Update(ctx, upd, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("update claim %s/%s: %w", upd.Namespace, upd.Name, err)
	}
	return c.newClaim.Observe(claimKey(out.Namespace, out.Name), out), nil
}

// addFinalizer persists that a backend volume may exist from now on, which
// endpoint may hold it (node "" pins nothing: an endpoint without a node
// ID is not one of several), and the request that may make it.
func (c *Controller) addFinalizer(ctx context.Context, claim *v1.PersistentVolumeClaim, node string, req *csipb.CreateVolumeRequest) (*v1.PersistentVolumeClaim, error) {
	needsPin := node != "" && claim.Annotations[AnnEndpointNode] == ""
	needsRecord := !recordPasses(claim, req)
	if hasFinalizer(claim.Finalizers, ClaimFinalizer) && !needsPin && !needsRecord {
		return claim, nil
	}
	upd := claim.DeepCopy()
	if !hasFinalizer(upd.Finalizers, ClaimFinalizer) {
		upd.Finalizers = append(upd.Finalizers, ClaimFinalizer)
	}
	if upd.Annotations == nil {
		upd.Annotations = map[string]string{}
	}
	if needsPin {
		upd.Annotations[AnnEndpointNode] = node
	}
	if needsRecord {
		rec, err := recordRequest(req)
		if err != nil {
			return nil, err
		}
		upd.Annotations[AnnCreateRequest] = rec
	}
	return c.updateClaim(ctx, upd)
}

// recordPasses says whether the claim records a request that passes the
// check against req, the request about to be sent: an earlier attempt's is
// kept (it may have made the volume); one written by anyone else, or none,
// is replaced by req's.
func recordPasses(claim *v1.PersistentVolumeClaim, req *csipb.CreateVolumeRequest) bool {
	rec, ok, err := recordedRequest(claim)
	return err == nil && ok && whyNotOurs(rec, factsOf(req)) == ""
}

// repin moves the endpoint pin to node: only after the pinned endpoint
// answered that it made nothing.
func (c *Controller) repin(ctx context.Context, claim *v1.PersistentVolumeClaim, node string) (*v1.PersistentVolumeClaim, error) {
	if claim.Annotations[AnnEndpointNode] == node {
		return claim, nil
	}
	upd := claim.DeepCopy()
	if upd.Annotations == nil {
		upd.Annotations = map[string]string{}
	}
	upd.Annotations[AnnEndpointNode] = node
	return c.updateClaim(ctx, upd)
}

// dropFinalizer says no backend volume can exist without a PV any more:
// the finalizer and the endpoint pin go together.
func (c *Controller) dropFinalizer(ctx context.Context, claim *v1.PersistentVolumeClaim) (*v1.PersistentVolumeClaim, error) {
	if !markedInProgress(claim) {
		return claim, nil
	}
	upd := claim.DeepCopy()
	unpin(upd)
	out, err := c.updateClaim(ctx, upd)
	if apierrors.IsNotFound(err) {
		return claim, nil // the claim went away once our finalizer was its last
	}
	return out, err
}

// markedInProgress: the claim carries any of what unpin removes.
func markedInProgress(c *v1.PersistentVolumeClaim) bool {
	return hasFinalizer(c.Finalizers, ClaimFinalizer) || c.Annotations[AnnEndpointNode] != "" || c.Annotations[AnnCreateRequest] != ""
}

// onlyMarksChanged says whether cur differs from old in the in-progress
// marks (finalizer, pin, recorded request) and in nothing else but its
// version.
func onlyMarksChanged(old, cur *v1.PersistentVolumeClaim) bool {
	if marks(old) == marks(cur) {
		return false
	}
	o, n := old.DeepCopy(), cur.DeepCopy()
	unpin(o)
	unpin(n)
	o.ResourceVersion, n.ResourceVersion = "", ""
	o.ManagedFields, n.ManagedFields = nil, nil
	return apiequality.Semantic.DeepEqual(o, n)
}

// marks are the claim's in-progress marks, comparable.
func marks(c *v1.PersistentVolumeClaim) [3]string {
	return [3]string{strconv.FormatBool(hasFinalizer(c.Finalizers, ClaimFinalizer)), c.Annotations[AnnEndpointNode], c.Annotations[AnnCreateRequest]}
}

// unpin removes the in-progress finalizer, the endpoint pin and the
// recorded request from upd.
func unpin(upd *v1.PersistentVolumeClaim) {
	upd.Finalizers, _ = binding.WithoutFinalizer(upd.Finalizers, ClaimFinalizer)
	delete(upd.Annotations, AnnEndpointNode)
	delete(upd.Annotations, AnnCreateRequest)
}

// createVolume creates the PV; one that exists already for this claim (an
// earlier attempt's) is fine, one for another claim is a final error.
func (c *Controller) createVolume(ctx context.Context, claim *v1.PersistentVolumeClaim, pv *v1.PersistentVolume) error {
	out, err := c.client.CoreV1().PersistentVolumes().Create(ctx, pv, metav1.CreateOptions{})
	if err == nil {
		c.madePVs.Observe(out.Name, out)
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
		return final(fmt.Errorf("PV %s exists and was not made for this claim", pv.Name))
	}
	c.madePVs.Observe(have.Name, have)
	return nil
}
