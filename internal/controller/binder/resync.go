package binder

import (
	"context"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	"github.com/volplane/volplane/internal/binding"
)

// resyncUnsettled re-queues the objects not at rest (binding.ClaimAtRest,
// VolumeAtRest) that were not synced within the last period. Objects synced
// lately are skipped too: during a large backlog they are the bulk of the
// unsettled ones, and re-queuing them made the extra syncs grow with the
// backlog (quadratic runs). An unsettled object is thus revisited within two
// periods of its last sync, not one.
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
		if key := binding.ClaimKey(claim); !binding.ClaimAtRest(claim) && c.claimsSynced.Stale(key, c.resync) {
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
		if !binding.VolumeAtRest(pv) && c.volumesSynced.Stale(pv.Name, c.resync) {
			c.volumeQ.Add(pv.Name)
			n++
		}
	}
	klog.FromContext(ctx).V(4).Info("Resync", "unsettled", n)
}
