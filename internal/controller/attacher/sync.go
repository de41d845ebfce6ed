package attacher

import (
	"context"
	"fmt"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/klog/v2"

	"github.com/volplane/volplane/internal/controller/loop"
	"github.com/volplane/volplane/internal/csierror"
	"github.com/volplane/volplane/internal/informerindex"
	"github.com/volplane/volplane/internal/publication"
)

// maxSteps bounds the steps of one sync: protect the PV, annotate, call
// the driver; anything more means a write did not stick, and the next sync
// (with backoff) will see why.
const maxSteps = 4

// syncAttachment walks one attachment as far as it can: decide, apply the
// step, decide again on what the write returned. Every failure is retried
// with the runner's backoff, as the external-attacher retries them all.
func (c *Controller) syncAttachment(ctx context.Context, name string) (loop.Result, error) {
	va, err := c.vas.Get(name)
	if apierrors.IsNotFound(err) {
		return loop.Done(), c.withdraw(ctx, name)
	}
	if err != nil {
		return loop.Done(), fmt.Errorf("VolumeAttachment %s: %w", name, err)
	}
	if !c.ours(va) {
		return loop.Done(), nil
	}
	// An attachment of this name exists again: it owns the publication
	// (publishing again is idempotent, and its deletion detaches).
	c.withdrawals.drop(name)
	va = c.newestVA.Newer(name, va)
	logger := klog.LoggerWithValues(klog.FromContext(ctx), "volumeattachment", klog.KObj(va),
		"driver", va.Spec.Attacher, "node", va.Spec.NodeName)
	ctx = klog.NewContext(ctx, logger)
	for range maxSteps {
		in := c.read(va)
		d := publication.Decide(in)
		logger.V(4).Info("Decided", "decision", d)
		var done bool
		switch d.Step {
		case publication.None:
			return loop.Done(), nil
		case publication.Refuse:
			return loop.Done(), c.fail(ctx, va, d.Err, d.Operation)
		case publication.AddVolumeFinalizer:
			if err := c.protectVolume(ctx, in.Volume, va.Spec.Attacher); err != nil {
				return loop.Done(), c.fail(ctx, va, fmt.Errorf("could not add PersistentVolume finalizer: %w", err), publication.Attach)
			}
		case publication.Annotate:
			if va, err = c.annotate(ctx, va, d.NodeID); err != nil {
				return loop.Done(), c.fail(ctx, va, fmt.Errorf("could not save VolumeAttachment: %w", err), publication.Attach)
			}
		case publication.MarkAttached:
			err, done = c.markAttached(ctx, va, nil), true
		case publication.Publish:
			err, done = c.publish(ctx, va, in.Volume, d), true
		case publication.Unpublish:
			err, done = c.unpublish(ctx, va, in.Volume, d), true
		}
		if err != nil || done {
			return loop.Done(), err
		}
	}
	return loop.Done(), fmt.Errorf("VolumeAttachment %s: not settled after %d steps", name, maxSteps)
}

// read gathers the decision's input from the caches (and our newer writes).
func (c *Controller) read(va *storagev1.VolumeAttachment) publication.Input {
	in := publication.Input{Attachment: va}
	if info, ok := c.pool.Info(va.Spec.Attacher); ok {
		in.Capabilities = publication.Capabilities{Publish: info.Publish,
			PublishReadOnly: info.PublishReadOnly, SingleNodeMultiWriter: info.SingleNodeMultiWriter}
	}
	if name := va.Spec.Source.PersistentVolumeName; name != nil {
		if pv, err := c.pvs.Get(*name); err == nil {
			in.Volume = c.newestPV.Newer(pv.Name, pv)
		}
	}
	if n, err := c.csiNodes.Get(va.Spec.NodeName); err == nil {
		in.CSINode = n
	}
	return in
}

// publish attaches through the driver and marks the attachment attached.
func (c *Controller) publish(ctx context.Context, va *storagev1.VolumeAttachment, pv *v1.PersistentVolume, d publication.Decision) error {
	ep, err := c.endpoint(va.Spec.Attacher, pv)
	if err != nil {
		return c.fail(ctx, va, err, publication.Attach)
	}
	req := d.Publish
	if req.Secrets, err = c.secrets(ctx, d.SecretRef); err != nil {
		return c.fail(ctx, va, err, publication.Attach)
	}
	callCtx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	publishContext, err := ep.ControllerPublishVolume(callCtx, req)
	if err != nil {
		klog.FromContext(ctx).V(2).Info("ControllerPublishVolume failed", "class", csierror.Classify(err).String(), "err", err)
		return c.fail(ctx, va, err, publication.Attach)
	}
	klog.FromContext(ctx).V(2).Info("Attached")
	err = c.markAttached(ctx, va, publishContext)
	if apierrors.IsNotFound(err) {
		// Deleted although our finalizer was on it (see withdrawal).
		c.withdrawals.put(va.Name, withdrawal{driver: va.Spec.Attacher, volume: pv, secretRef: d.SecretRef,
			request: &csipb.ControllerUnpublishVolumeRequest{VolumeId: req.VolumeId, NodeId: req.NodeId}})
		return c.withdraw(ctx, va.Name)
	}
	if err != nil {
		return fmt.Errorf("failed to mark as attached: %w", err)
	}
	return nil
}

// unpublish detaches through the driver, then lets the attachment go.
func (c *Controller) unpublish(ctx context.Context, va *storagev1.VolumeAttachment, pv *v1.PersistentVolume, d publication.Decision) error {
	ep, err := c.endpoint(va.Spec.Attacher, pv)
	if err != nil {
		return c.fail(ctx, va, err, publication.Detach)
	}
	req := d.Unpublish
	if req.Secrets, err = c.secrets(ctx, d.SecretRef); err != nil {
		return c.fail(ctx, va, err, publication.Detach)
	}
	callCtx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	if err := ep.ControllerUnpublishVolume(callCtx, req); err != nil {
		klog.FromContext(ctx).V(2).Info("ControllerUnpublishVolume failed", "class", csierror.Classify(err).String(), "err", err)
		return c.fail(ctx, va, err, publication.Detach)
	}
	klog.FromContext(ctx).V(2).Info("Detached")
	if err := c.markDetached(ctx, va); err != nil {
		return c.fail(ctx, va, fmt.Errorf("could not mark as detached: %w", err), publication.Detach)
	}
	return nil
}

// fail saves err in the attachment's status (attachError, or detachError
// for a Detach) and returns it, so the attachment is retried with backoff.
func (c *Controller) fail(ctx context.Context, va *storagev1.VolumeAttachment, err error, op publication.Operation) error {
	if saveErr := c.saveError(ctx, va, err, op); saveErr != nil {
		klog.FromContext(ctx).V(2).Info("Could not save the error in the VolumeAttachment", "err", saveErr)
	}
	if op == publication.Detach {
		return fmt.Errorf("failed to detach: %w", err)
	}
	return fmt.Errorf("failed to attach: %w", err)
}

// syncVolume removes our finalizer from a PV being deleted once no
// attachment names it.
func (c *Controller) syncVolume(ctx context.Context, name string) (loop.Result, error) {
	pv, err := c.pvs.Get(name)
	if apierrors.IsNotFound(err) {
		return loop.Done(), nil
	}
	if err != nil {
		return loop.Done(), fmt.Errorf("PV %s: %w", name, err)
	}
	pv = c.newestPV.Newer(name, pv)
	driver := c.volumeDriver(pv)
	if driver == "" {
		return loop.Done(), nil
	}
	named, err := informerindex.AttachmentsOf(c.vaIndex, name)
	if err != nil {
		return loop.Done(), fmt.Errorf("PV %s: attachments: %w", name, err)
	}
	d := publication.DecideVolume(pv, driver, len(named) > 0)
	klog.FromContext(ctx).V(4).Info("Decided", "pv", klog.KObj(pv), "driver", driver, "step", d.Step.String(), "reason", d.Reason)
	if d.Step != publication.VolumeRemoveFinalizer {
		return loop.Done(), nil
	}
	return loop.Done(), c.unprotectVolume(ctx, pv, driver)
}
