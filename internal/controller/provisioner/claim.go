package provisioner

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/volplane/volplane/internal/controller/loop"
	"github.com/volplane/volplane/internal/csierror"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/volplane/volplane/internal/binding"
	"github.com/volplane/volplane/internal/capacity"
	"github.com/volplane/volplane/internal/provisioning"
)

// claimDecision is a decision with the facts it was made from.
type claimDecision struct {
	action provisioning.ClaimAction
	facts  provisioning.ClaimFacts
	// turn is whose claim it is, in node deployment (else zero).
	turn provisioning.ClaimVerdict
}

// decide reads the facts of a claim and asks provisioning what to do.
func (c *Controller) decide(claim *v1.PersistentVolumeClaim) claimDecision {
	f := c.claimFacts(claim)
	d := claimDecision{action: provisioning.DecideClaim(f), facts: f}
	if c.node != nil && d.action != provisioning.ClaimNone {
		d.turn = provisioning.ForClaim(c.local(provisioning.ClaimDriver(claim)), f)
		d.action = provisioning.Gated(d.action, d.turn.Turn)
	}
	return d
}

// claimFacts reads what the decision needs from the listers, and the PVs
// made here, which the lister may not show yet.
func (c *Controller) claimFacts(claim *v1.PersistentVolumeClaim) provisioning.ClaimFacts {
	f := provisioning.ClaimFacts{Claim: claim, Serves: c.pool.Serves, Pin: claim.Annotations[provisioning.AnnEndpointNode]}
	if name := binding.ClaimClass(claim); name != "" {
		f.Class, _ = c.read.classes.Get(name)
	}
	pvName := provisioning.VolumeName(claim)
	if _, err := c.read.pvs.Get(pvName); err == nil {
		f.PVExists = true
	} else if _, ok := c.memory.madePVs.Get(pvName); ok {
		f.PVExists = true
	}
	return f
}

// syncClaim reads a claim, asks provisioning what to do and does it, in the
// order doc.go states. Failures are errors the runner retries with
// backoff; a node waiting its turn in a race asks for the key again later.
func (c *Controller) syncClaim(ctx context.Context, key string) (loop.Result, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return loop.Done(), nil // not a key this loop queues
	}
	claim, err := c.read.claims.PersistentVolumeClaims(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return loop.Done(), nil
	}
	if err != nil {
		return loop.Done(), err
	}
	claim = c.memory.newClaim.Observe(key, claim)
	d := c.decide(claim)
	logger := klog.FromContext(ctx).WithValues("pvc", klog.KObj(claim))
	if d.action != provisioning.ClaimNone {
		logger.V(4).Info("Claim sync", "action", d.action)
	}
	if c.node != nil && d.action != provisioning.ClaimRace {
		c.memory.races.settled(claim.UID)
		if d.turn.Turn == provisioning.Leave {
			logger.V(5).Info("Not this node's claim", "node", c.node.NodeName, "reason", d.turn.String())
		}
	}
	ctx = klog.NewContext(ctx, logger)
	class := d.facts.Class
	if d.action == provisioning.ClaimProvision || d.action == provisioning.ClaimCleanup {
		if class, err = c.driverClass(claim, class); err != nil {
			return loop.Done(), err
		}
	}
	switch d.action {
	case provisioning.ClaimProvision:
		return c.provision(ctx, claim, class)
	case provisioning.ClaimPopulator:
		c.leaveToPopulator(ctx, claim)
	case provisioning.ClaimRace:
		return c.race(ctx, key, claim)
	case provisioning.ClaimFinish:
		c.memory.creates.settled(claim.UID)
		if err := c.releaseSource(ctx, claim); err != nil {
			return loop.Done(), err
		}
		_, err := c.dropFinalizer(ctx, claim)
		return loop.Done(), err
	case provisioning.ClaimCleanup:
		return loop.Done(), c.cleanup(ctx, claim, class)
	}
	return loop.Done(), nil
}

// announce is the lib's event before every Provision call.
func (c *Controller) announce(claim *v1.PersistentVolumeClaim, driver string) {
	c.event(claim, claim.UID, driver, v1.EventTypeNormal, provisioning.EventProvisioning,
		"External provisioner is provisioning volume for claim %q", claim.Namespace+"/"+claim.Name)
}

// leaveToPopulator is what the external-provisioner does for a data source
// it does not handle: announce, note that a populator is assumed, and stop
// without a retry or any change to the claim (which keeps its selected
// node: the populator needs it).
func (c *Controller) leaveToPopulator(ctx context.Context, claim *v1.PersistentVolumeClaim) {
	driver := provisioning.ClaimDriver(claim)
	c.announce(claim, driver)
	c.eventIn(provisioning.EventProvisioning+"/populator", claim, claim.UID, driver, v1.EventTypeNormal, provisioning.EventProvisioning,
		"Assuming an external populator will provision the volume")
	klog.FromContext(ctx).V(4).Info("Volume provision ignored", "reason", fmt.Sprintf(
		"data source (%s) is not handled by the provisioner, assuming an external populator will provision it", provisioning.PopulatorKind(claim)))
}

// provision runs the persisted steps: the in-progress marks (first, or
// only if the create is slow or leaves a volume possible:
// provisioning.MarkFirst), the backend volume, the PV; then drops the
// marks if they were written.
func (c *Controller) provision(ctx context.Context, claim *v1.PersistentVolumeClaim, class *storagev1.StorageClass) (loop.Result, error) {
	driver := provisioning.ClaimDriver(claim)
	c.announce(claim, driver)
	if err := provisioning.Refusal(claim); err != nil {
		return loop.Done(), c.failed(ctx, claim, driver, err, provisioning.BeforeCreate(err, claim))
	}
	p, err := c.plan(ctx, claim, class, driver, forCreate)
	var misfit *provisioning.PinMisfit
	if errors.As(err, &misfit) {
		return c.ignorePin(ctx, claim, driver, misfit)
	}
	if err != nil {
		return loop.Done(), c.failed(ctx, claim, driver, err, provisioning.BeforeCreate(err, claim))
	}
	// Decided before the pin below is written: only a claim that no earlier
	// attempt pinned, and that waits for no selected node, may move on.
	movable := claim.Annotations[provisioning.AnnEndpointNode] == "" && claim.Annotations[annSelectedNode] == ""
	defer c.ledger.Release(claim.UID)
	if v := c.roomOnSelectedNode(claim, class, p); v.Fit == capacity.NoRoom {
		return loop.Done(), c.handBack(ctx, claim, driver, v)
	}
	if provisioning.MarkFirst(claim, c.markAfter) {
		if claim, err = c.addFinalizer(ctx, claim, p.endpoint.Info.NodeID, p.request); err != nil {
			return loop.Done(), err
		}
	}
	if err := c.protectSource(ctx, claim); err != nil {
		return loop.Done(), err
	}
	claim, vol, err := c.createMarking(ctx, claim, class, p)
	if movable && csierror.OutOfRoom(err) {
		claim, p, vol, err = c.fallBack(ctx, claim, class, driver, p, err)
	}
	return loop.Done(), c.provisioned(ctx, claim, class, driver, p, vol, err)
}

// createMarking is create for a claim that may not be marked in progress
// yet (provisioning.MarkFirst): once the call has run for markAfter, the
// marks are written while it runs. It returns the claim as last written.
// A mark that cannot be written leaves the create to createMemory, which
// cleans up after a claim deleted while this process runs; provisioned
// marks again if the answer leaves a volume without its PV.
func (c *Controller) createMarking(ctx context.Context, claim *v1.PersistentVolumeClaim, class *storagev1.StorageClass, p plan) (*v1.PersistentVolumeClaim, *csipb.Volume, error) {
	if provisioning.MarkedInProgress(claim) {
		vol, err := c.create(ctx, claim, class, p)
		return claim, vol, err
	}
	var vol *csipb.Volume
	var err error
	answered := make(chan struct{})
	go func() {
		defer close(answered)
		vol, err = c.create(ctx, claim, class, p)
	}()
	slow := time.NewTimer(c.markAfter)
	defer slow.Stop()
	select {
	case <-answered:
		return claim, vol, err
	case <-slow.C:
	}
	marked, merr := c.addFinalizer(ctx, claim, p.endpoint.Info.NodeID, p.request)
	if merr != nil {
		klog.FromContext(ctx).V(2).Info("Could not mark the claim while its create runs", "err", merr)
		marked = claim
	}
	<-answered
	return marked, vol, err
}

// ignorePin drops an endpoint pin that no attempt can have written (see
// pinnedPlan) from the claim, says so, and has the claim planned again
// without it: the new plan pins the endpoint it chooses. The write changes
// only the marks, which wakes nobody (onClaimUpdated), hence Again.
func (c *Controller) ignorePin(ctx context.Context, claim *v1.PersistentVolumeClaim, driver string, misfit *provisioning.PinMisfit) (loop.Result, error) {
	c.event(claim, claim.UID, driver, v1.EventTypeWarning, provisioning.EventRecordRejected, "ignored %v; choosing the endpoint again", misfit)
	upd := claim.DeepCopy()
	delete(upd.Annotations, provisioning.AnnEndpointNode)
	if _, err := c.updateClaim(ctx, upd); err != nil {
		return loop.Done(), err
	}
	klog.FromContext(ctx).V(2).Info("Ignored an endpoint pin outside the claim's topology", "pin", misfit.Node)
	return loop.Again(), nil
}

// create is create, remembered (createMemory) until its outcome settles.
// The volume is counted as in flight on the endpoint's segment meanwhile
// (counted).
func (c *Controller) create(ctx context.Context, claim *v1.PersistentVolumeClaim, class *storagev1.StorageClass, p plan) (vol *csipb.Volume, err error) {
	c.memory.creates.sending(claim, p)
	defer c.memory.creates.answered(claim.UID)
	c.counted(claim.UID, class, p, func() error {
		vol, err = create(ctx, p)
		return err
	})
	return vol, err
}

// create asks the plan's endpoint for the volume. ResourceExhausted counts
// only when the same request gets it twice (see csierror.OutOfRoom): a driver
// that made the volume and still answered it returns the volume the second
// time, and the volume is not lost by moving on or unpinning.
func create(ctx context.Context, p plan) (*csipb.Volume, error) {
	vol, err := p.endpoint.CreateVolume(ctx, p.request)
	if !csierror.OutOfRoom(err) {
		return vol, err
	}
	klog.FromContext(ctx).V(4).Info("ResourceExhausted; asking once more to confirm", "node", p.endpoint.Info.NodeID, "err", err)
	return p.endpoint.CreateVolume(ctx, p.request)
}

// fallBack tries the next preferred nodes after the planned one confirmed
// it has no room, moving the pin along: the node left made nothing. It
// returns the last plan tried and its answer.
func (c *Controller) fallBack(ctx context.Context, claim *v1.PersistentVolumeClaim, class *storagev1.StorageClass, driver string, p plan, err error) (*v1.PersistentVolumeClaim, plan, *csipb.Volume, error) {
	var vol *csipb.Volume
	for _, next := range c.fallbacks(driver, p) {
		klog.FromContext(ctx).V(2).Info("No room; trying the next node", "node", p.endpoint.Info.NodeID, "next", next.endpoint.Info.NodeID, "err", err)
		if provisioning.MarkedInProgress(claim) {
			upd, rerr := c.repin(ctx, claim, next.endpoint.Info.NodeID)
			if rerr != nil {
				return claim, p, nil, rerr
			}
			claim = upd
		}
		p = next
		if claim, vol, err = c.createMarking(ctx, claim, class, p); !csierror.OutOfRoom(err) {
			break
		}
	}
	return claim, p, vol, err
}

// provisioned finishes after CreateVolume answered: a failure is reported
// (and, once nothing can exist, lets the in-progress finalizer go); a
// volume gets its PV, and then the finalizer goes.
func (c *Controller) provisioned(ctx context.Context, claim *v1.PersistentVolumeClaim, class *storagev1.StorageClass, driver string, p plan, vol *csipb.Volume, err error) error {
	if err != nil {
		out := provisioning.AfterCreate(err, claim, p.endpoint.Info.Accessibility)
		if !out.Unpin {
			claim, err = c.markUnsettled(ctx, claim, p, err)
		}
		return c.failed(ctx, claim, driver, err, out)
	}
	pv, err := provisioning.ProvisionedVolume(claim, class, driver, vol, p.secrets)
	if err == nil {
		if c.attacherFinalizer {
			pv = provisioning.WithAttacherFinalizer(pv, p.endpoint.Info.Publish)
		}
		err = c.createVolume(ctx, claim, pv)
	}
	if err != nil {
		c.event(claim, claim.UID, driver, v1.EventTypeWarning, provisioning.EventFailed, "%v", err)
		_, err = c.markUnsettled(ctx, claim, p, err)
		return err
	}
	// The PV owns the volume from now on.
	c.memory.creates.settled(claim.UID)
	// Reported once the PV exists: the finalizer's removal below may
	// conflict with the binder's bind and be finished by a later sync.
	klog.FromContext(ctx).V(2).Info("Provisioned", "pv", pv.Name, "driver", driver, "handle", vol.GetVolumeId())
	c.event(claim, claim.UID, driver, v1.EventTypeNormal, provisioning.EventSucceeded, "Successfully provisioned volume %s", pv.Name)
	if err := c.releaseSource(ctx, claim); err != nil {
		return err
	}
	_, err = c.dropFinalizer(ctx, claim)
	return err
}

// markUnsettled marks the claim in progress after an answer that leaves a
// volume possible without its PV (a create that may still run, a PV create
// refused), so that a crash before the next attempt cannot leak it. err is
// that answer, returned with the mark's failure if the mark fails.
func (c *Controller) markUnsettled(ctx context.Context, claim *v1.PersistentVolumeClaim, p plan, err error) (*v1.PersistentVolumeClaim, error) {
	marked, merr := c.addFinalizer(ctx, claim, p.endpoint.Info.NodeID, p.request)
	if merr != nil {
		return claim, fmt.Errorf("%w (and marking the claim in progress failed: %v)", err, merr)
	}
	return marked, err
}

// failed reports a provisioning failure as the lib v13 does (Warning
// ProvisioningFailed with the error itself), applies the outcome and
// returns err so the claim is retried with backoff.
func (c *Controller) failed(ctx context.Context, claim *v1.PersistentVolumeClaim, driver string, err error, out provisioning.FailureOutcome) error {
	c.event(claim, claim.UID, driver, v1.EventTypeWarning, provisioning.EventFailed, "%v", err)
	if out.Unpin {
		c.memory.creates.settled(claim.UID) // nothing was made
	}
	if out.Unpin && provisioning.MarkedInProgress(claim) {
		if rerr := c.releaseSource(ctx, claim); rerr != nil {
			return fmt.Errorf("%w (and releasing its data source failed: %v)", err, rerr)
		}
	}
	if upd := provisioning.AfterFailure(claim, out); upd != nil {
		if _, werr := c.updateClaim(ctx, upd); werr != nil {
			return fmt.Errorf("%w (and the claim update failed: %v)", err, werr)
		}
		klog.FromContext(ctx).V(2).Info("Provisioning failed; claim updated", "err", err, "rescheduled", out.Reschedule, "unpinned", out.Unpin)
	}
	return err
}
