package resizer

import (
	"context"
	"fmt"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/klog/v2"

	"github.com/volplane/volplane/internal/claimstatus"
	"github.com/volplane/volplane/internal/controller/loop"
	"github.com/volplane/volplane/internal/controller/resizing"
	"github.com/volplane/volplane/internal/csi"
	"github.com/volplane/volplane/internal/csierror"
	"github.com/volplane/volplane/internal/expansion"
	"github.com/volplane/volplane/internal/publication"
	"github.com/volplane/volplane/internal/quantity"
)

// expand walks one expansion: mark the claim in progress, ask the driver,
// grow the PV, then mark the claim pending on the node or finished. Every
// step already done (after a crash, or a retry) writes nothing.
func (c *Controller) expand(ctx context.Context, key string, claim *v1.PersistentVolumeClaim, pv *v1.PersistentVolume, d expansion.Decision) (loop.Result, error) {
	driver := pv.Spec.CSI.Driver
	claim, err := c.WriteClaim(ctx, key, claim, expansion.MarkControllerResizeInProgress(claim, d.Size, c.MarkTime()), claimstatus.IfUnchanged)
	if err != nil {
		return loop.Done(), fmt.Errorf("marking pvc %s as resizing failed: %w", key, err)
	}
	c.Recorders.Event(driver, claim, v1.EventTypeNormal, expansion.EventResizing, expansion.MessageResizing(pv.Name))
	c.Memory.Calling(key)
	capacity, nodeRequired, err := c.callDriver(ctx, driver, pv, d.Size)
	if err != nil {
		return c.failed(ctx, key, claim, pv, err)
	}
	c.Memory.Forget(key)
	klog.FromContext(ctx).V(2).Info("Volume expanded", "capacity", capacity.String(), "nodeExpansionRequired", nodeRequired)
	if err := c.growVolume(ctx, pv, capacity); err != nil {
		return loop.Done(), fmt.Errorf("error updating pv %q by resizer: %w", pv.Name, err)
	}
	if nodeRequired {
		if _, err := c.WriteClaim(ctx, key, claim, expansion.MarkNodeResizePending(claim, c.MarkTime()), claimstatus.IfUnchanged); err != nil {
			return loop.Done(), fmt.Errorf("mark PVC %s as node expansion required failed: %w", key, err)
		}
		c.Recorders.Event(driver, claim, v1.EventTypeNormal, expansion.EventFileSystemResizeRequired, expansion.MessageFileSystemResizeRequired)
		return loop.Done(), nil
	}
	if _, err := c.WriteClaim(ctx, key, claim, expansion.MarkResizeFinished(claim, capacity), claimstatus.IfUnchanged); err != nil {
		return loop.Done(), fmt.Errorf("mark PVC %s as resize finished failed: %w", key, err)
	}
	c.Recorders.Event(driver, claim, v1.EventTypeNormal, expansion.EventResizeSuccessful, expansion.MessageResizeSuccessful)
	return loop.Done(), nil
}

// callDriver asks the driver to expand the volume to size and returns the
// capacity it reports and whether the node must expand too. A driver
// whose controller cannot expand (node EXPAND_VOLUME only) is not called:
// the node does it all (the reference's trivial resizer).
func (c *Controller) callDriver(ctx context.Context, driver string, pv *v1.PersistentVolume, size resource.Quantity) (resource.Quantity, bool, error) {
	expanding := c.Capable(driver, func(i csi.Info) bool { return i.ControllerExpand })
	if len(expanding) == 0 {
		return size, true, nil
	}
	ep, err := csi.NewPool(expanding...).ForVolume(driver, pv)
	if err != nil {
		return size, false, fmt.Errorf("no endpoint to expand through: %w", err)
	}
	capability, err := publication.Capability(&pv.Spec, ep.Info.SingleNodeMultiWriter)
	if err != nil {
		return size, false, fmt.Errorf("failed to get capabilities of volume %s with %w", pv.Name, err)
	}
	secrets, err := c.Secrets(ctx, pv.Spec.CSI.ControllerExpandSecretRef) // read live, as the reference does
	if err != nil {
		return size, false, err
	}
	bytes, ok := quantity.Bytes(size)
	if !ok {
		return size, false, quantity.TooLarge(size) // Decide never asks for one; no driver is called with a wrapped size
	}
	got, nodeRequired, err := ep.ControllerExpandVolume(ctx, &csipb.ControllerExpandVolumeRequest{
		VolumeId: pv.Spec.CSI.VolumeHandle, CapacityRange: &csipb.CapacityRange{RequiredBytes: bytes},
		Secrets: secrets, VolumeCapability: capability})
	if err != nil {
		return size, false, err
	}
	switch {
	case got <= 0:
		return size, nodeRequired, nil // the driver reported no capacity: take what was asked
	case got < bytes:
		// Not expanded: finishing at this size would leave the request
		// unmet and start over at once; a retry backs off instead.
		return size, false, fmt.Errorf("the driver answered %d bytes, less than the %d asked for", got, bytes)
	}
	return *resource.NewQuantity(got, resource.BinarySI), nodeRequired, nil
}

// refuse marks a claim whose size no driver can be asked for as
// infeasible, without calling the driver and without allocating the size:
// one write and one event, and nothing at all once the claim says so.
// Only a change of the claim (a new request) looks at it again, so a
// refused size loops neither in writes nor in events.
func (c *Controller) refuse(ctx context.Context, key string, claim *v1.PersistentVolumeClaim, pv *v1.PersistentVolume, d expansion.Decision) error {
	sizeErr := quantity.TooLarge(d.Size)
	want := expansion.MarkControllerResizeFailed(claim, sizeErr, true, c.MarkTime())
	if want == nil {
		return nil // refused and told already
	}
	if _, err := c.WriteClaim(ctx, key, claim, want, claimstatus.IfUnchanged); err != nil {
		return fmt.Errorf("marking pvc %s as infeasible failed: %w", key, err)
	}
	klog.FromContext(ctx).V(2).Info("Expansion refused", "size", d.Size.String(), "reason", d.Reason)
	c.Recorders.Event(pv.Spec.CSI.Driver, claim, v1.EventTypeWarning, expansion.EventResizeFailed,
		expansion.ResizeError(pv.Name, pv.Spec.CSI.Driver, sizeErr).Error())
	return nil
}

// failed records a failed expansion. A final error is saved in the claim
// (ControllerResizeError; infeasible ones also ControllerResizeInfeasible,
// then retried only after the slow retry); any other leaves the claim in
// progress, to be retried with backoff.
func (c *Controller) failed(ctx context.Context, key string, claim *v1.PersistentVolumeClaim, pv *v1.PersistentVolume, callErr error) (loop.Result, error) {
	driver := pv.Spec.CSI.Driver
	resizeErr := expansion.ResizeError(pv.Name, driver, callErr)
	logger := klog.FromContext(ctx)
	outcome := expandOutcome(callErr)
	c.Memory.Answered(key, outcome, c.Clock.Now())
	if outcome == resizing.MayBeRunning {
		logger.V(2).Info("ControllerExpandVolume failed, the volume may still be expanding", "err", callErr)
		c.Recorders.Event(driver, claim, v1.EventTypeWarning, expansion.EventResizeFailed, resizeErr.Error())
		return loop.Done(), resizeErr
	}
	infeasible := outcome == resizing.EndedInfeasible
	logger.V(2).Info("ControllerExpandVolume failed", "infeasible", infeasible, "err", callErr)
	// A failure mark lands whatever changed, as the reference's does.
	if _, err := c.WriteClaim(ctx, key, claim, expansion.MarkControllerResizeFailed(claim, callErr, infeasible, c.MarkTime()), claimstatus.Always); err != nil {
		resizeErr = fmt.Errorf("resizing failed in controller with %w but failed to update PVC %s with: %v", callErr, key, err)
	}
	c.Recorders.Event(driver, claim, v1.EventTypeWarning, expansion.EventResizeFailed, resizeErr.Error())
	if infeasible {
		return loop.After(c.SlowRetry), nil
	}
	return loop.Done(), resizeErr
}

// expandOutcome is what a failed ControllerExpandVolume means to the
// loop's memory, in the external-resizer's meanings.
func expandOutcome(err error) resizing.Outcome {
	switch {
	case !csierror.OperationFinal(err): // the external-resizer's IsFinalError: the driver may still be expanding
		return resizing.MayBeRunning
	case csierror.ExpandInfeasible(err): // its IsInfeasibleError: this size never will be
		return resizing.EndedInfeasible
	case csierror.InUse(err): // FailedPrecondition: the driver expands only volumes no node uses
		return resizing.EndedInUse
	}
	return resizing.Ended
}
