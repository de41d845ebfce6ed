package expander

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/volplane/volplane/internal/claimstatus"
	"github.com/volplane/volplane/internal/controller/loop"
	"github.com/volplane/volplane/internal/controller/resizing"
	"github.com/volplane/volplane/internal/expansion"
)

// sync reads the claim and its PV from the caches, asks DecideHandOff, and
// records and writes what it decided.
func (c *Controller) sync(ctx context.Context, key string) (loop.Result, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return loop.Done(), nil // not a key of ours: nothing to retry
	}
	claim, err := c.claims.PersistentVolumeClaims(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return loop.Done(), nil
	}
	if err != nil {
		return loop.Done(), fmt.Errorf("claim %s: %w", key, err)
	}
	pv, err := c.volume(claim.Spec.VolumeName)
	if err != nil {
		return loop.Done(), err
	}
	h := expansion.DecideHandOff(claim, pv)
	logger := klog.FromContext(ctx)
	logger.V(4).Info("Hand-off decided", "pvc", klog.KObj(claim), "pv", claim.Spec.VolumeName, "decision", h)
	for _, e := range h.Events {
		c.recorder.Event(claim, e.Type, e.Reason, e.Message)
	}
	if h.Annotate != "" {
		if err := c.annotate(ctx, claim, h.Annotate); err != nil {
			e := expansion.HandOffAnnotateFailed(claim, err)
			c.recorder.Event(claim, e.Type, e.Reason, e.Message)
			return loop.Done(), fmt.Errorf("annotate claim %s with resizer %s: %w", key, h.Annotate, err)
		}
		logger.V(2).Info("Claim handed to the external resizer of its migrated volume", "pvc", klog.KObj(claim), "driver", h.Annotate)
	}
	// A claim whose PV is not cached (or not its own) yet is retried with
	// backoff, as the reference retries it.
	return loop.Done(), h.Retry
}

// volume is the PV of that name from the cache, nil if none or no name.
func (c *Controller) volume(name string) (*v1.PersistentVolume, error) {
	if name == "" {
		return nil, nil
	}
	pv, err := c.pvs.Get(name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("persistent volume %s: %w", name, err)
	}
	return pv, nil
}

// annotate writes the resizer annotation through the status subresource
// with the resourceVersion read, as the reference's SetClaimResizer does:
// a claim changed since is refused (a conflict, retried).
func (c *Controller) annotate(ctx context.Context, claim *v1.PersistentVolumeClaim, driver string) error {
	_, err := resizing.WriteClaim(ctx, c.client, claim, expansion.WithResizer(claim, driver), claimstatus.IfUnchanged)
	return err
}
