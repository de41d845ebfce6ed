package resizer

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/volplane/volplane/internal/expansion"
)

// syncClaim reads one claim and its PV, asks expansion.Decide, and acts.
func (c *Controller) syncClaim(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil // not a key of ours; retrying will not fix it
	}
	claim, err := c.claims.PersistentVolumeClaims(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("claim %s: %w", key, err)
	}
	claim = c.newestClaim.Newer(key, claim)
	f := c.read(key, claim)
	d := expansion.Decide(f)
	logger := klog.LoggerWithValues(klog.FromContext(ctx), "pvc", klog.KObj(claim), "pv", claim.Spec.VolumeName)
	logger.V(4).Info("Decided", "decision", d)
	ctx = klog.NewContext(ctx, logger)
	switch d.Action {
	case expansion.Expand:
		return c.expand(ctx, key, claim, f.Volume, d)
	case expansion.Infeasible:
		return c.refuse(ctx, key, claim, f.Volume, d)
	case expansion.RetryLater:
		if d.Reason == expansion.ReasonOfflineInUse {
			c.event(f.Volume.Spec.CSI.Driver, claim, v1.EventTypeWarning, expansion.EventResizeFailed,
				expansion.MessageOfflineInUse(claim, f.Volume.Spec.CSI.Driver))
		}
		return c.retryLater(key, d)
	}
	return nil
}

// read gathers the decision's facts from the caches and the loop's memory.
func (c *Controller) read(key string, claim *v1.PersistentVolumeClaim) expansion.Facts {
	f := expansion.Facts{Claim: claim, FinalErrorSeen: c.memory.hasFinalError(key),
		OfflineInUse: c.memory.refusedInUse(key) && c.inUse(key)}
	if claim.Spec.VolumeName != "" {
		if pv, err := c.pvs.Get(claim.Spec.VolumeName); err == nil {
			f.Volume = c.newestPV.Newer(pv.Name, pv)
		}
	}
	if f.Volume == nil || f.Volume.Spec.CSI == nil {
		return f
	}
	driver := f.Volume.Spec.CSI.Driver
	f.Served = c.holds(f.Volume)
	for _, e := range c.pool.Endpoints(driver) {
		f.ControllerExpand = f.ControllerExpand || e.Info.ControllerExpand
		f.NodeExpand = f.NodeExpand || e.Info.Expand
	}
	if expansion.ResizeStatus(claim) == v1.PersistentVolumeClaimControllerResizeInfeasible {
		now := c.now()
		f.InfeasibleBackoff = c.memory.slowRetryLeft(key, now, c.slowRetry) > 0
		c.memory.startSlowRetry(key, now, c.slowRetry)
	}
	return f
}

// retryLater waits out an infeasible size's slow retry without counting
// it as a failure, or backs off on anything else.
func (c *Controller) retryLater(key string, d expansion.Decision) error {
	if d.Reason == expansion.ReasonInfeasibleBackoff {
		c.queue.AddAfter(key, c.memory.slowRetryLeft(key, c.now(), c.slowRetry))
		return nil
	}
	return fmt.Errorf("claim %s: %s", key, d.Reason.Message())
}
