package attacher

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/volplane/volplane/internal/publication"
)

// protectVolume adds the driver's finalizer to the PV (JSON Patch).
func (c *Controller) protectVolume(ctx context.Context, pv *v1.PersistentVolume, driver string) error {
	patch := publication.VolumeFinalizerPatch(pv, driver)
	if patch == nil {
		return nil
	}
	out, err := c.client.CoreV1().PersistentVolumes().Patch(ctx, pv.Name, types.JSONPatchType, patch, metav1.PatchOptions{})
	if err != nil {
		return err
	}
	c.newestPV.Wrote(pv.Name, out)
	klog.FromContext(ctx).V(4).Info("PersistentVolume finalizer added", "pv", klog.KObj(pv))
	return nil
}

// unprotectVolume removes the driver's finalizer from the PV (JSON Patch
// that tests the finalizer is still where it was read).
func (c *Controller) unprotectVolume(ctx context.Context, pv *v1.PersistentVolume, driver string) error {
	patch := publication.VolumeFinalizerRemovalPatch(pv, driver)
	if patch == nil {
		return nil
	}
	out, err := c.client.CoreV1().PersistentVolumes().Patch(ctx, pv.Name, types.JSONPatchType, patch, metav1.PatchOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("removing finalizer from PV %s: %w", pv.Name, err)
	}
	c.newestPV.Wrote(pv.Name, out)
	klog.FromContext(ctx).V(2).Info("Removed finalizer from PersistentVolume", "pv", klog.KObj(pv), "driver", driver)
	return nil
}

// annotate puts the finalizer and the node ID on the attachment in one
// merge patch of its metadata. It returns the attachment as written (or as
// given when the write fails or there is nothing to write).
func (c *Controller) annotate(ctx context.Context, va *storagev1.VolumeAttachment, nodeID string) (*storagev1.VolumeAttachment, error) {
	want := publication.Annotated(va, nodeID)
	if want == nil {
		return va, nil
	}
	return c.patch(ctx, va, metadataPatch(va, want), "")
}

// markAttached writes status.attached with the publish context.
func (c *Controller) markAttached(ctx context.Context, va *storagev1.VolumeAttachment, publishContext map[string]string) error {
	want := publication.Attached(va, publishContext)
	if want == nil {
		return nil
	}
	_, err := c.patch(ctx, va, statusPatch(va, want), "status")
	return err
}

// markDetached removes the finalizer, then clears the status, unless the
// finalizer was the last one of an attachment being deleted: it is gone
// then, and the reference's status write would only hear NotFound.
func (c *Controller) markDetached(ctx context.Context, va *storagev1.VolumeAttachment) error {
	if want := publication.WithoutFinalizer(va); want != nil {
		out, err := c.patch(ctx, va, metadataPatch(va, want), "")
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if out.DeletionTimestamp != nil && len(out.Finalizers) == 0 {
			return nil
		}
		va = out
	}
	want := publication.Detached(va)
	if want == nil {
		return nil
	}
	_, err := c.patch(ctx, va, statusPatch(va, want), "status")
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// saveError writes the error into status.attachError, or detachError for
// a Detach.
func (c *Controller) saveError(ctx context.Context, va *storagev1.VolumeAttachment, err error, op publication.Operation) error {
	want := publication.WithError(va, err, op, c.clock.Now())
	_, perr := c.patch(ctx, va, statusPatch(va, want), "status")
	return perr
}

// patch sends a merge patch (to the subresource, if any) and records what
// came back as our newest copy.
func (c *Controller) patch(ctx context.Context, va *storagev1.VolumeAttachment, patch []byte, subresource string) (*storagev1.VolumeAttachment, error) {
	var sub []string
	if subresource != "" {
		sub = []string{subresource}
	}
	out, err := c.client.StorageV1().VolumeAttachments().Patch(ctx, va.Name, types.MergePatchType, patch, metav1.PatchOptions{}, sub...)
	if err != nil {
		return va, err
	}
	return c.newestVA.Wrote(va.Name, out), nil
}

// metadataPatch is the merge patch from old to cur of the two metadata
// fields the attacher changes: the finalizer list (a merge patch replaces a
// list whole) and the annotations (key by key).
func metadataPatch(old, cur *storagev1.VolumeAttachment) []byte {
	meta := map[string]any{}
	if !apiequality.Semantic.DeepEqual(old.Finalizers, cur.Finalizers) {
		meta["finalizers"] = cur.Finalizers // nil marshals as null: removes the list
	}
	if ann := mapPatch(old.Annotations, cur.Annotations); ann != nil {
		meta["annotations"] = ann
	}
	return mustJSON(map[string]any{"metadata": meta})
}

// statusPatch is the merge patch from old to cur of the status.
func statusPatch(old, cur *storagev1.VolumeAttachment) []byte {
	o, n := old.Status, cur.Status
	st := map[string]any{}
	if o.Attached != n.Attached {
		st["attached"] = n.Attached
	}
	if !maps.Equal(o.AttachmentMetadata, n.AttachmentMetadata) {
		if n.AttachmentMetadata == nil {
			st["attachmentMetadata"] = nil
		} else {
			st["attachmentMetadata"] = mapPatch(o.AttachmentMetadata, n.AttachmentMetadata)
		}
	}
	if !apiequality.Semantic.DeepEqual(o.AttachError, n.AttachError) {
		st["attachError"] = n.AttachError
	}
	if !apiequality.Semantic.DeepEqual(o.DetachError, n.DetachError) {
		st["detachError"] = n.DetachError
	}
	return mustJSON(map[string]any{"status": st})
}

// mapPatch sets the keys that changed and nulls the keys removed; nil if
// nothing changed.
func mapPatch(old, cur map[string]string) map[string]any {
	out := map[string]any{}
	for k, v := range cur {
		if w, ok := old[k]; !ok || w != v {
			out[k] = v
		}
	}
	for k := range old {
		if _, ok := cur[k]; !ok {
			out[k] = nil
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func mustJSON(v any) []byte {
	out, err := json.Marshal(v)
	if err != nil {
		panic(err) // maps of strings, bools and API structs always marshal
	}
	return out
}
