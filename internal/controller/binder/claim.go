package binder

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/volplane/volplane/internal/binding"
	"github.com/volplane/volplane/internal/controller/loop"
)

// syncClaim reads a claim, decides, and applies the decision.
func (c *Controller) syncClaim(ctx context.Context, key string) (loop.Result, error) {
	defer c.afterClaimSync(key)
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return loop.Done(), nil // not a key we made; nothing to retry
	}
	claim, err := c.claim(ns, name)
	if err != nil || claim == nil {
		return loop.Done(), err
	}
	// As the reference's syncClaim, migrated-to is brought in step first.
	if claim, err = c.updateClaimOr(ctx, claim, binding.ClaimMigration(claim)); err != nil {
		return loop.Done(), fmt.Errorf("update migration annotation: %w", err)
	}
	in, err := c.claimInput(claim)
	if err != nil {
		return loop.Done(), err
	}
	defer c.unreserve(in.Match)
	d := binding.DecideClaim(in)
	// d, not d.String(): the logger renders a Stringer only if it logs.
	klog.FromContext(ctx).V(4).Info("Claim decision", "pvc", klog.KObj(claim), "decision", d)
	return loop.Done(), c.applyClaim(ctx, claim, d)
}

// claimInput gathers what DecideClaim needs. For a claim still looking for a
// volume it picks the best free PV and reserves it, so no other worker can
// pick the same PV before our first write lands; when none fits, it adds
// the tally of every PV, if the decision reports it.
func (c *Controller) claimInput(claim *v1.PersistentVolumeClaim) (binding.ClaimInput, error) {
	in := binding.ClaimInput{Claim: claim}
	var err error
	if in.Pods, err = c.podsUsing(claim.Namespace, claim.Name); err != nil {
		return in, err
	}
	if in.Class, err = c.claimClass(claim); err != nil {
		return in, err
	}
	if in.DefaultClass, err = c.defaultClass(); err != nil {
		return in, err
	}
	if claim.Spec.VolumeName != "" {
		in.Volume, err = c.volume(claim.Spec.VolumeName)
		return in, err
	}
	if !binding.IsWaiting(claim) {
		return in, nil
	}
	key := binding.ClaimKey(claim)
	c.mu.Lock()
	in.Match = c.index.FindBest(claim, binding.DelayBinding(in.Class))
	if in.Match != nil {
		c.index.Reserve(in.Match.Name, key)
	}
	wants := binding.WantsTally(in)
	if !wants {
		c.tallies.Forget(key)
	}
	c.mu.Unlock()
	if wants {
		in.Tally = c.tally(claim)
	}
	return in, nil
}

func (c *Controller) unreserve(pv *v1.PersistentVolume) {
	if pv == nil {
		return
	}
	c.mu.Lock()
	c.index.Release(pv.Name)
	c.mu.Unlock()
}

// afterClaimSync offers the PVs that woke this claim, and that it did not
// take, to the next waiting claim (through their volume sync).
func (c *Controller) afterClaimSync(key string) {
	c.mu.Lock()
	pvs := c.waiting.Release(key)
	c.mu.Unlock()
	for _, name := range pvs {
		c.volumeQ.Add(name)
	}
}

// applyClaim performs a claim decision's writes, in order, then records its
// events. Like the reference, an event is recorded once the write it reports
// succeeded: a write that fails is retried, and recording first would report
// a ClaimLost (say) once per attempt.
func (c *Controller) applyClaim(ctx context.Context, claim *v1.PersistentVolumeClaim, d binding.ClaimDecision) error {
	if err := c.writeClaimDecision(ctx, claim, d); err != nil {
		return err
	}
	c.record(fromClaimSync, d.Events, claim, d.Volume)
	return nil
}

func (c *Controller) writeClaimDecision(ctx context.Context, claim *v1.PersistentVolumeClaim, d binding.ClaimDecision) error {
	switch d.Action {
	case binding.ClaimBind:
		return c.bind(ctx, claim, d.Volume)
	case binding.ClaimSetDefaultClass:
		_, err := c.updateClaimOr(ctx, claim, binding.SetClaimClass(claim, d.Class))
		c.metrics.retroactive.Inc()
		if err != nil {
			c.metrics.retroactiveErrors.Inc()
			return err
		}
		// With its class the claim can now bind or be provisioned; our own
		// write's event does not re-sync it.
		c.claimQ.Add(binding.ClaimKey(claim))
		return nil
	case binding.ClaimProvision:
		// Once the annotations are set the step is nil and the claim we
		// hold carries on to the phase write (see the write helpers'
		// contract in writes.go).
		updated, err := c.updateClaimOr(ctx, claim, binding.SetClaimProvisioner(claim, d.Provisioner))
		if err != nil {
			return err
		}
		c.ops.start(binding.ClaimKey(claim), d.Provisioner, opProvision)
		return c.setClaimPhase(ctx, updated, v1.ClaimPending)
	case binding.ClaimPending:
		return c.setClaimPhase(ctx, claim, v1.ClaimPending)
	case binding.ClaimLost:
		return c.setClaimPhase(ctx, claim, v1.ClaimLost)
	}
	return nil
}

func (c *Controller) setClaimPhase(ctx context.Context, claim *v1.PersistentVolumeClaim, phase v1.PersistentVolumeClaimPhase) error {
	_, err := c.updateClaimStatusOr(ctx, claim, binding.SetClaimPhase(claim, phase))
	return err
}

// bind makes the four writes of a bind, each skipped when it would change
// nothing, so that a bind interrupted after any of them is completed, never
// redone, by the next sync. The PV stays locked throughout: its volume sync
// must not write the PV's status between our writes.
func (c *Controller) bind(ctx context.Context, claim *v1.PersistentVolumeClaim, pv *v1.PersistentVolume) error {
	unlock, err := c.pvLocks.Lock(ctx, pv.Name)
	if err != nil {
		return err
	}
	defer unlock()
	pv = c.newPV.Newer(pv.Name, pv)
	if err := c.stillFor(pv, claim); err != nil {
		return err
	}
	if pv, err = c.updateVolumeOr(ctx, pv, binding.BindVolumeSpec(pv, claim)); err != nil {
		return fmt.Errorf("bind %s: write volume claimRef: %w", pv.Name, err)
	}
	if pv, err = c.updateVolumeStatusOr(ctx, pv, binding.BindVolumeStatus(pv)); err != nil {
		return fmt.Errorf("bind %s: write volume phase: %w", pv.Name, err)
	}
	if claim, err = c.updateClaimOr(ctx, claim, binding.BindClaimSpec(claim, pv)); err != nil {
		return fmt.Errorf("bind %s: write claim volumeName: %w", pv.Name, err)
	}
	if _, err = c.updateClaimStatusOr(ctx, claim, binding.BindClaimStatus(claim, pv)); err != nil {
		return fmt.Errorf("bind %s: write claim phase: %w", pv.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Bound", "pvc", klog.KObj(claim), "pv", pv.Name)
	c.ops.done(binding.ClaimKey(claim))
	return nil
}

// stillFor checks, under the PV's lock and on the newest copy of the PV,
// that the decision to bind still holds (binding.BindStillHolds, with the
// PV's reservation read from the index). The error requeues the claim,
// which then decides from the newer copy.
func (c *Controller) stillFor(pv *v1.PersistentVolume, claim *v1.PersistentVolumeClaim) error {
	c.mu.Lock()
	holder, _ := c.index.ReservedBy(pv.Name)
	c.mu.Unlock()
	return binding.BindStillHolds(pv, claim, holder)
}
