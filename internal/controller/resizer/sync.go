package resizer

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/volplane/volplane/internal/controller/loop"
	"github.com/volplane/volplane/internal/expansion"
)

// syncClaim reads one claim and its PV, asks expansion.Decide, and acts.
func (c *Controller) syncClaim(ctx context.Context, key string) (loop.Result, error) {
	claim, err := c.Claim(key)
	if err != nil || claim == nil {
		return loop.Done(), err
	}
	f := c.read(key, claim)
	d := expansion.Decide(f)
	logger := klog.LoggerWithValues(klog.FromContext(ctx), "pvc", klog.KObj(claim), "pv", claim.Spec.VolumeName)
	logger.V(4).Info("Decided", "decision", d)
	ctx = klog.NewContext(ctx, logger)
	switch d.Action {
	case expansion.Expand:
		return c.expand(ctx, key, claim, f.Volume, d)
	case expansion.Infeasible:
		return loop.Done(), c.refuse(ctx, key, claim, f.Volume, d)
	case expansion.RetryLater:
		if d.Reason == expansion.ReasonOfflineInUse {
			c.Recorders.Event(f.Volume.Spec.CSI.Driver, claim, v1.EventTypeWarning, expansion.EventResizeFailed,
				expansion.MessageOfflineInUse(claim, f.Volume.Spec.CSI.Driver))
		}
		return c.retryLater(key, d)
	}
	return loop.Done(), nil
}

// read gathers the decision's facts from the caches and the loop's memory.
func (c *Controller) read(key string, claim *v1.PersistentVolumeClaim) expansion.Facts {
	f := expansion.Facts{Claim: claim, Volume: c.Volume(claim), FinalErrorSeen: c.Memory.Ended(key),
		OfflineInUse: c.Memory.RefusedInUse(key) && c.inUse(key)}
	if f.Volume == nil || f.Volume.Spec.CSI == nil {
		return f
	}
	driver := f.Volume.Spec.CSI.Driver
	f.Served = c.Holds(f.Volume)
	for _, e := range c.Pool.Endpoints(driver) {
		f.ControllerExpand = f.ControllerExpand || e.Info.ControllerExpand
		f.NodeExpand = f.NodeExpand || e.Info.Expand
	}
	if expansion.ResizeStatus(claim) == v1.PersistentVolumeClaimControllerResizeInfeasible {
		now := c.Clock.Now()
		f.InfeasibleBackoff = c.Memory.SlowRetryLeft(key, now, c.SlowRetry) > 0
		c.Memory.StartSlowRetry(key, now, c.SlowRetry)
	}
	return f
}

// retryLater waits out an infeasible size's slow retry without counting
// it as a failure, or backs off on anything else.
func (c *Controller) retryLater(key string, d expansion.Decision) (loop.Result, error) {
	if d.Reason == expansion.ReasonInfeasibleBackoff {
		return loop.After(c.Memory.SlowRetryLeft(key, c.Clock.Now(), c.SlowRetry)), nil
	}
	return loop.Done(), fmt.Errorf("claim %s: %s", key, d.Reason.Message())
}
