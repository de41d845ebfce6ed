package binder

import (
	"context"

	"k8s.io/klog/v2"
)

// resyncUnsettled re-queues the objects last seen not at rest
// (binding.ClaimAtRest, VolumeAtRest: the handlers keep the sets) that were
// not synced within the last period; it never walks the objects at rest.
// Objects synced lately are skipped too: during a large backlog they are
// the bulk of the unsettled ones, and re-queuing them made the extra syncs
// grow with the backlog (quadratic runs). An unsettled object is thus
// revisited within two periods of its last sync, not one.
func (c *Controller) resyncUnsettled(ctx context.Context) {
	defer c.metrics.resyncs.Inc() // once the pass has queued what it found
	defer c.claimsSynced.ForgetOlder(c.resync)
	defer c.volumesSynced.ForgetOlder(c.resync)
	n := 0
	for _, key := range c.unsettledClaims.Keys() {
		if c.claimsSynced.Stale(key, c.resync) {
			c.claimQ.Add(key)
			n++
		}
	}
	for _, name := range c.unsettledVolumes.Keys() {
		if c.volumesSynced.Stale(name, c.resync) {
			c.volumeQ.Add(name)
			n++
		}
	}
	klog.FromContext(ctx).V(4).Info("Resync", "unsettled", n)
}
