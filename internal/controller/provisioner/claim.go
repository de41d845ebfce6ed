package provisioner

import (
	"context"
	"fmt"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"

	"github.com/volplane/volplane/internal/binding"
	"github.com/volplane/volplane/internal/csi"
)

// claimDecision is a decision with the facts it was made from.
type claimDecision struct {
	action claimAction
	facts  claimFacts
}

// decide reads the facts of a claim from the listers (and the PVs we made
// ourselves, which the lister may not show yet) and decides.
func (c *Controller) decide(claim *v1.PersistentVolumeClaim) claimDecision {
	f := claimFacts{claim: claim, serves: c.pool.Serves}
	if name := binding.ClaimClass(claim); name != "" {
		f.class, _ = c.classes.Get(name)
	}
	pvName := volumeName(claim)
	if _, err := c.pvs.Get(pvName); err == nil {
		f.pvExists = true
	} else if _, ok := c.madePVs.Get(pvName); ok {
		f.pvExists = true
	}
	return claimDecision{action: decideClaim(f), facts: f}
}

func (c *Controller) syncClaim(ctx context.Context, key string) error {
	ns, name := splitKey(key)
	claim, err := c.claims.PersistentVolumeClaims(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	claim = c.newClaim.Observe(key, claim)
	d := c.decide(claim)
	logger := klog.FromContext(ctx).WithValues("pvc", klog.KObj(claim))
	if d.action != claimNone {
		logger.V(4).Info("Claim sync", "action", d.action)
	}
	ctx = klog.NewContext(ctx, logger)
	class := d.facts.class
	if d.action == claimProvision || d.action == claimCleanup {
		if class, err = c.driverClass(claim, class); err != nil {
			return err
		}
	}
	switch d.action {
	case claimProvision:
		return c.provision(ctx, claim, class)
	case claimFinish:
		_, err := c.dropFinalizer(ctx, claim)
		return err
	case claimCleanup:
		return c.cleanup(ctx, claim, class)
	}
	return nil
}

// provision runs the three persisted steps: the in-progress finalizer, the
// backend volume, the PV; then drops the finalizer.
func (c *Controller) provision(ctx context.Context, claim *v1.PersistentVolumeClaim, class *storagev1.StorageClass) error {
	driver := claimDriver(claim)
	plan, err := c.plan(claim, class, driver, true)
	if err != nil {
		return c.failed(ctx, claim, class, driver, err, false)
	}
	// Decided before the pin below is written: only a claim that no earlier
	// attempt pinned, and that waits for no selected node, may move on.
	movable := claim.Annotations[AnnEndpointNode] == "" && claim.Annotations[annSelectedNode] == ""
	if claim, err = c.addFinalizer(ctx, claim, plan.endpoint.Info.NodeID, plan.request); err != nil {
		return err
	}
	c.event(claim, claim.UID, driver, v1.EventTypeNormal, reasonProvisioning,
		"External provisioner is provisioning volume for claim %q", claim.Namespace+"/"+claim.Name)
	vol, err := plan.endpoint.CreateVolume(ctx, plan.request)
	if !movable || !csi.IsOutOfRoom(err) {
		return c.provisioned(ctx, claim, class, driver, vol, err)
	}
	for _, next := range c.fallbacks(driver, plan) {
		// The endpoint made nothing, so the pin may move on with the request.
		klog.FromContext(ctx).V(2).Info("No room; trying the next node", "node", plan.endpoint.Info.NodeID, "next", next.endpoint.Info.NodeID, "err", err)
		if claim, err = c.repin(ctx, claim, next.endpoint.Info.NodeID); err != nil {
			return err
		}
		plan = next
		if vol, err = plan.endpoint.CreateVolume(ctx, plan.request); !csi.IsOutOfRoom(err) {
			break
		}
	}
	return c.provisioned(ctx, claim, class, driver, vol, err)
}

// provisioned finishes after CreateVolume answered: a failure is reported
// (and, if final, lets the in-progress finalizer go); a volume gets its PV,
// and then the finalizer goes.
func (c *Controller) provisioned(ctx context.Context, claim *v1.PersistentVolumeClaim, class *storagev1.StorageClass, driver string, vol *csipb.Volume, err error) error {
	if err != nil {
		return c.failed(ctx, claim, class, driver, fromDriver(err), true)
	}
	pv, err := provisionedVolume(claim, class, driver, vol)
	if err == nil {
		err = c.createVolume(ctx, claim, pv)
	}
	if err != nil {
		c.event(claim, claim.UID, driver, v1.EventTypeWarning, reasonFailed,
			"failed to provision volume with StorageClass %q: %v", class.Name, err)
		return err
	}
	// Reported once the PV exists: the finalizer's removal below may
	// conflict with the binder's bind and be finished by a later sync.
	klog.FromContext(ctx).V(2).Info("Provisioned", "pv", pv.Name, "driver", driver, "handle", vol.GetVolumeId())
	c.event(claim, claim.UID, driver, v1.EventTypeNormal, reasonSucceeded, "Successfully provisioned volume %s", pv.Name)
	_, err = c.dropFinalizer(ctx, claim)
	return err
}

// failed reports a provisioning failure and returns err so the claim is
// retried with backoff. A final error on a claim with a selected node asks
// the scheduler to choose again. fromCreate says the error is the driver's
// answer to CreateVolume: a final one means no backend volume exists, so
// the in-progress finalizer goes too; any other error leaves the finalizer,
// since an earlier attempt may have made a volume.
func (c *Controller) failed(ctx context.Context, claim *v1.PersistentVolumeClaim, class *storagev1.StorageClass, driver string, err error, fromCreate bool) error {
	c.event(claim, claim.UID, driver, v1.EventTypeWarning, reasonFailed,
		"failed to provision volume with StorageClass %q: %v", class.Name, err)
	if !isFinal(err) {
		return err
	}
	upd := claim.DeepCopy()
	changed := false
	if _, ok := upd.Annotations[annSelectedNode]; ok {
		delete(upd.Annotations, annSelectedNode)
		changed = true
	}
	if fromCreate && markedInProgress(upd) {
		unpin(upd)
		changed = true
	}
	if changed {
		if _, werr := c.updateClaim(ctx, upd); werr != nil {
			return fmt.Errorf("%w (and the claim update failed: %v)", err, werr)
		}
		klog.FromContext(ctx).V(2).Info("Final provisioning error; claim left for rescheduling", "err", err)
	}
	return err
}
