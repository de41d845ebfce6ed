package modifier

import (
	"context"
	"errors"
	"fmt"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/klog/v2"

	"github.com/volplane/volplane/internal/claimstatus"
	"github.com/volplane/volplane/internal/controller/loop"
	"github.com/volplane/volplane/internal/controller/resizing"
	"github.com/volplane/volplane/internal/csi"
	"github.com/volplane/volplane/internal/csierror"
	"github.com/volplane/volplane/internal/modification"
)

// errClassMissing makes a resumed modification whose class is gone retry
// with backoff (the claim keeps its InProgress mark).
var errClassMissing = errors.New("the target VolumeAttributesClass does not exist")

// syncClaim reads one claim, its PV and classes, asks modification.Decide,
// and acts; a slow retry or a wait is returned as loop.After.
func (c *Controller) syncClaim(ctx context.Context, key string) (loop.Result, error) {
	claim, err := c.Claim(key)
	if err != nil || claim == nil {
		return loop.Done(), err
	}
	f := c.facts(key, claim)
	d := modification.Decide(f)
	logger := klog.FromContext(ctx).WithValues("pvc", klog.KObj(claim))
	if d.Action != modification.None {
		logger.V(4).Info("Claim sync", "decision", d)
	}
	ctx = klog.NewContext(ctx, logger)
	switch d.Action {
	case modification.Modify:
		return loop.Done(), c.modify(ctx, key, claim, f.Volume, d)
	case modification.Pending:
		return loop.Done(), c.pending(ctx, key, claim, f.Volume, d)
	case modification.Rollback:
		return loop.Done(), c.rollBack(ctx, key, claim, f.Volume)
	case modification.Unsupported:
		return c.unsupported(ctx, key, claim, f.Volume)
	case modification.Wait:
		return loop.After(d.Wait), nil
	}
	return loop.Done(), nil
}

// facts reads what Decide needs from the listers and the loop's memory.
func (c *Controller) facts(key string, claim *v1.PersistentVolumeClaim) modification.Facts {
	f := modification.Facts{Claim: claim, Volume: c.Volume(claim),
		Classes: map[string]*storagev1.VolumeAttributesClass{},
		// Not known to have ended: after a restart nothing is known.
		Uncertain:     !c.Memory.Ended(key),
		SlowRetryLeft: c.Memory.SlowRetryLeft(key, c.Clock.Now(), c.SlowRetry)}
	if f.Volume != nil && f.Volume.Spec.CSI != nil {
		f.CanModify = len(c.modifying(f.Volume.Spec.CSI.Driver)) > 0
		// In node deployment another node's volume is not served here.
		f.Served = c.Holds(f.Volume)
	}
	for _, name := range []string{modification.SpecClass(claim), modification.TargetClass(claim)} {
		if class, err := c.classes.Get(name); name != "" && err == nil {
			f.Classes[name] = class
		}
	}
	return f
}

// modifying are the driver's endpoints with MODIFY_VOLUME.
func (c *Controller) modifying(driver string) []*csi.Endpoint {
	return c.Capable(driver, func(i csi.Info) bool { return i.Modify })
}

// modify marks the claim InProgress when the modification starts, asks
// the driver, and records the outcome.
func (c *Controller) modify(ctx context.Context, key string, claim *v1.PersistentVolumeClaim, pv *v1.PersistentVolume, d modification.Decision) error {
	driver := pv.Spec.CSI.Driver
	if d.Start {
		c.Memory.Calling(key)
		marked, err := c.WriteClaim(ctx, key, claim, modification.MarkModifyInProgress(claim, c.MarkTime()), claimstatus.IfUnchanged)
		if err != nil {
			return fmt.Errorf("mark PVC %q as modify volume in progress failed: %w", claim.Name, err)
		}
		claim = marked
		c.Recorders.Event(driver, claim, v1.EventTypeNormal, modification.EventModify, modification.MessageModify(claim.Name, d.Target))
	}
	if err := c.callDriver(ctx, claim, pv, d.Class); err != nil {
		return c.failed(ctx, key, claim, driver, d.Target, err)
	}
	c.Memory.Forget(key)
	if err := c.finish(ctx, key, claim, pv, d.Target); err != nil {
		return fmt.Errorf("modify volume failed to mark pvc %s modify volume completed: %w", claim.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Volume modified", "pv", pv.Name, "class", d.Target)
	c.Recorders.Event(driver, claim, v1.EventTypeNormal, modification.EventModifySuccessful, modification.MessageModified(claim.Name, d.Target))
	return nil
}

// callDriver asks the endpoint holding the volume to apply the class.
func (c *Controller) callDriver(ctx context.Context, claim *v1.PersistentVolumeClaim, pv *v1.PersistentVolume, class *storagev1.VolumeAttributesClass) error {
	driver := pv.Spec.CSI.Driver
	if pv.Spec.CSI.VolumeHandle == "" {
		return errors.New("empty volume handle")
	}
	ep, err := csi.NewPool(c.modifying(driver)...).ForVolume(driver, pv)
	if err != nil {
		return fmt.Errorf("no endpoint to modify volume %s through: %w", pv.Name, err)
	}
	secrets, err := c.Secrets(ctx, modification.SecretRef(pv))
	if err != nil {
		return err
	}
	return ep.ControllerModifyVolume(ctx, &csipb.ControllerModifyVolumeRequest{
		VolumeId: pv.Spec.CSI.VolumeHandle, Secrets: secrets, MutableParameters: class.Parameters})
}

// failed records a failed call. A gRPC answer is saved in the claim
// (Infeasible for InvalidArgument, with a slow retry); any error is
// reported and retried with backoff, the driver's answers after which it
// may still be working resuming the same target.
func (c *Controller) failed(ctx context.Context, key string, claim *v1.PersistentVolumeClaim, driver, target string, callErr error) error {
	if _, isStatus := csierror.Code(callErr); !isStatus { // an answer of the driver's carries a gRPC status
		// Not the driver's answer (no endpoint, no secret): nothing is
		// marked, as the reference marks only gRPC errors.
		c.Recorders.Event(driver, claim, v1.EventTypeWarning, modification.EventModifyFailed, callErr.Error())
		return callErr
	}
	outcome := modifyOutcome(callErr)
	c.Memory.Answered(key, outcome, c.Clock.Now())
	infeasible := outcome == resizing.EndedInfeasible
	if _, err := c.WriteClaim(ctx, key, claim, modification.MarkModifyFailed(claim, callErr, infeasible, c.MarkTime()), claimstatus.IfUnchanged); err != nil {
		return fmt.Errorf("mark PVC %q as modify volume failed, errored with: %w", claim.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("ControllerModifyVolume failed", "class", target,
		"final", outcome != resizing.MayBeRunning, "infeasible", infeasible, "err", callErr)
	c.Recorders.Event(driver, claim, v1.EventTypeWarning, modification.EventModifyFailed, modification.MessageFailed(callErr, target))
	return callErr
}

// modifyOutcome is what a failed ControllerModifyVolume means to the
// loop's memory, in the external-resizer's modify controller's meanings.
func modifyOutcome(err error) resizing.Outcome {
	switch {
	case !csierror.OperationFinal(err): // its IsFinalError: the driver may still be modifying
		return resizing.MayBeRunning
	case csierror.ModifyInfeasible(err): // InvalidArgument: these parameters never will do
		return resizing.EndedInfeasible
	}
	return resizing.Ended
}

// pending reports a target class that does not exist: a new target marks
// the claim Pending (the class's creation wakes it); a resumed one keeps
// its mark and is retried.
func (c *Controller) pending(ctx context.Context, key string, claim *v1.PersistentVolumeClaim, pv *v1.PersistentVolume, d modification.Decision) error {
	driver := pv.Spec.CSI.Driver
	if !d.Start {
		c.Recorders.Event(driver, claim, v1.EventTypeWarning, modification.EventModifyFailed, modification.MessageClassMissing(d.Target))
		return fmt.Errorf("%w: %q", errClassMissing, d.Target)
	}
	want := modification.MarkModifyPending(claim)
	if want == nil {
		return nil // reported when it was marked
	}
	c.Recorders.Event(driver, claim, v1.EventTypeWarning, modification.EventModifyFailed, modification.MessageClassMissing(d.Target))
	_, err := c.WriteClaim(ctx, key, claim, want, claimstatus.IfUnchanged)
	return err
}

// rollBack cancels the modification the claim no longer asks for.
func (c *Controller) rollBack(ctx context.Context, key string, claim *v1.PersistentVolumeClaim, pv *v1.PersistentVolume) error {
	c.Recorders.Event(pv.Spec.CSI.Driver, claim, v1.EventTypeNormal, modification.EventModifyCanceled, modification.MessageCanceled)
	// The reference's cancel goes without the resourceVersion check.
	_, err := c.WriteClaim(ctx, key, claim, modification.MarkRolledBack(claim), claimstatus.Always)
	return err
}

// unsupported reports a driver that cannot modify volumes, then retries
// slowly (a restarted driver may have learned).
func (c *Controller) unsupported(ctx context.Context, key string, claim *v1.PersistentVolumeClaim, pv *v1.PersistentVolume) (loop.Result, error) {
	driver := pv.Spec.CSI.Driver
	// As the driver's Unimplemented answer would be: over, and infeasible.
	c.Memory.Answered(key, resizing.EndedInfeasible, c.Clock.Now())
	want := modification.MarkModifyUnsupported(claim, driver, c.MarkTime())
	if want == nil {
		return loop.After(c.SlowRetry), nil
	}
	c.Recorders.Event(driver, claim, v1.EventTypeWarning, modification.EventModifyFailed, modification.MessageUnsupported(driver))
	if _, err := c.WriteClaim(ctx, key, claim, want, claimstatus.IfUnchanged); err != nil {
		return loop.Done(), err
	}
	return loop.After(c.SlowRetry), nil
}
