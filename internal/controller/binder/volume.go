package binder

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/volplane/volplane/internal/binding"
	"github.com/volplane/volplane/internal/controller/loop"
)

// syncVolume reads a PV, decides, and applies the decision. It holds the
// PV's lock so that it never writes between the writes of a bind.
func (c *Controller) syncVolume(ctx context.Context, name string) (loop.Result, error) {
	unlock, err := c.pvLocks.Lock(ctx, name)
	if err != nil {
		return loop.Done(), err
	}
	defer unlock()
	pv, err := c.volume(name)
	if err != nil || pv == nil {
		return loop.Done(), err
	}
	// As the reference's syncVolume, migrated-to and the deletion
	// finalizers are brought in step first; the decision sees the result.
	if pv, err = c.updateVolumeOr(ctx, pv, binding.VolumeMigration(pv)); err != nil {
		return loop.Done(), fmt.Errorf("update migration annotation and finalizers of %s: %w", name, err)
	}
	in, err := c.volumeInput(pv)
	if err != nil {
		return loop.Done(), err
	}
	d := binding.DecideVolume(in)
	if d.Action == binding.VolumeCheckLive {
		// A cache miss is not proof the claim is gone; releasing a volume
		// in use would hand its data to someone else.
		ref := pv.Spec.ClaimRef
		if in.Claim, err = c.liveClaim(ctx, ref.Namespace, ref.Name); err != nil {
			return loop.Done(), err
		}
		in.LiveChecked = true
		d = binding.DecideVolume(in)
	}
	klog.FromContext(ctx).V(4).Info("Volume decision", "pv", name, "decision", d) // rendered only if logged
	return c.applyVolume(ctx, pv, in.Claim, d)
}

// volumeInput gathers what DecideVolume needs: for a PV bound to a claim
// (claimRef with a UID), that claim and the pods that use it.
func (c *Controller) volumeInput(pv *v1.PersistentVolume) (binding.VolumeInput, error) {
	in := binding.VolumeInput{Volume: pv}
	ref := pv.Spec.ClaimRef
	if ref == nil || ref.UID == "" {
		return in, nil
	}
	var err error
	if in.Claim, err = c.claim(ref.Namespace, ref.Name); err != nil {
		return in, err
	}
	in.Pods, err = c.podsUsing(ref.Namespace, ref.Name)
	return in, err
}

// applyVolume performs a volume decision. The phase is written last and only
// here: PV status has one writer besides the bind, which holds the same lock.
// Events are recorded once the writes succeeded, as the reference does: a
// write that fails (a 409, say) is retried, and recording first would report
// the same transition twice.
func (c *Controller) applyVolume(ctx context.Context, pv *v1.PersistentVolume, claim *v1.PersistentVolumeClaim, d binding.VolumeDecision) (loop.Result, error) {
	var err error
	switch d.Action {
	case binding.VolumeNudgeClaim:
		c.claimQ.Add(binding.ClaimRefKey(pv.Spec.ClaimRef))
	case binding.VolumeUnbind:
		if pv, err = c.updateVolumeOr(ctx, pv, binding.UnbindVolumeSpec(pv)); err != nil {
			return loop.Done(), fmt.Errorf("unbind %s: %w", pv.Name, err)
		}
	case binding.VolumeRecycle:
		c.record(fromVolumeSync, d.Events, claim, pv)
		return c.recycle(ctx, pv, d)
	}
	offered := binding.NotOffered
	if binding.Offers(pv, d) {
		offered = c.offer(pv)
	}
	if pd := binding.DecidePhase(pv, d, offered); pd.Action == binding.PhaseLeftToBind {
		klog.FromContext(ctx).V(4).Info("Phase left to the bind", "pv", pv.Name, "phase", pd)
		c.record(fromVolumeSync, d.Events, claim, pv)
		return loop.Done(), nil
	}
	if pv, err = c.updateVolumeStatusOr(ctx, pv, binding.SetVolumePhase(pv, d.Phase, d.Message)); err != nil {
		return loop.Done(), err
	}
	c.volumeReclaimed(pv, d)
	c.record(fromVolumeSync, d.Events, claim, pv)
	return loop.Done(), nil
}

// offer hands a free PV to the waiting claim it fits best (index.Waiting
// chooses) and says whether one took it (or a claim has already reserved
// it).
func (c *Controller) offer(pv *v1.PersistentVolume) binding.Offer {
	fits := c.fitsFor(pv)
	c.mu.Lock()
	if _, reserved := c.index.ReservedBy(pv.Name); reserved {
		c.mu.Unlock()
		return binding.OfferTaken
	}
	key, ok := "", false
	if fits != nil {
		key, ok = c.waiting.Wake(pv, fits)
	}
	c.mu.Unlock()
	if !ok {
		return binding.OfferRefused
	}
	c.claimQ.Add(key)
	return binding.OfferTaken
}

// fitsFor returns what decides whether a waiting claim could take pv, nil
// when no claim can. A PV pre-bound to a claim fits it whatever its class, so
// the claim's own class says how it binds. A free PV only fits claims of its
// own class: the class is read once, and when it binds on first consumer no
// claim fits (the scheduler chooses), so the wake does not walk every
// waiting claim of the class to be told no by each.
func (c *Controller) fitsFor(pv *v1.PersistentVolume) func(*v1.PersistentVolumeClaim) bool {
	if pv.Spec.ClaimRef != nil {
		return func(claim *v1.PersistentVolumeClaim) bool {
			class, err := c.claimClass(claim)
			return err == nil && binding.Check(claim, pv, binding.DelayBinding(class)).Fits()
		}
	}
	class, err := c.classNamed(binding.VolumeClass(pv))
	if err != nil || binding.DelayBinding(class) {
		return nil
	}
	return func(claim *v1.PersistentVolumeClaim) bool {
		return binding.Check(claim, pv, false).Fits()
	}
}
