package binder

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	"github.com/volplane/volplane/internal/binding"
)

// resyncUnsettled re-queues the objects not at rest that were not synced
// within the last period. The reference re-queues every object every 15 s;
// objects at rest cannot change without an event, so revisiting them is pure
// cost at 100k volumes. Objects synced lately are skipped too: during a
// large backlog they are the bulk of the unsettled ones, and re-queuing them
// made the extra syncs grow with the backlog (quadratic runs). An unsettled
// object is thus revisited within two periods of its last sync, not one.
func (c *Controller) resyncUnsettled(ctx context.Context) {
	defer c.metrics.resyncs.Inc() // once the pass has queued what it found
	defer c.claimsSynced.ForgetOlder(c.resync)
	defer c.volumesSynced.ForgetOlder(c.resync)
	claims, err := c.claims.List(labels.Everything())
	if err != nil {
		klog.FromContext(ctx).Error(err, "Resync: list claims")
		return
	}
	n := 0
	for _, claim := range claims {
		if key := binding.ClaimKey(claim); !claimAtRest(claim) && c.claimsSynced.Stale(key, c.resync) {
			c.claimQ.Add(key)
			n++
		}
	}
	pvs, err := c.pvs.List(labels.Everything())
	if err != nil {
		klog.FromContext(ctx).Error(err, "Resync: list volumes")
		return
	}
	for _, pv := range pvs {
		if !volumeAtRest(pv) && c.volumesSynced.Stale(pv.Name, c.resync) {
			c.volumeQ.Add(pv.Name)
			n++
		}
	}
	klog.FromContext(ctx).V(4).Info("Resync", "unsettled", n)
}

// claimAtRest: bound, with nothing left to complete on the claim itself.
// Whether its PV still points back is the volume side's business, and a
// change there reaches the claim through the volume sync.
func claimAtRest(claim *v1.PersistentVolumeClaim) bool {
	return claim.Status.Phase == v1.ClaimBound && claim.Spec.VolumeName != "" && !binding.IsWaiting(claim)
}

// volumeAtRest: Bound, or Released/Failed under a policy that needs nothing
// more from us (Retain), or Available with nothing that could bind it.
func volumeAtRest(pv *v1.PersistentVolume) bool {
	switch pv.Status.Phase {
	case v1.VolumeBound:
		return pv.Spec.ClaimRef != nil && pv.Spec.ClaimRef.UID != ""
	case v1.VolumeReleased:
		return pv.Spec.PersistentVolumeReclaimPolicy == v1.PersistentVolumeReclaimRetain
	case v1.VolumeFailed:
		return true
	case v1.VolumeAvailable:
		// Waiting claims are resynced themselves and search every free PV.
		return pv.Spec.ClaimRef == nil
	}
	return false
}
