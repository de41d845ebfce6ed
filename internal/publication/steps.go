package publication

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/internal/attachment"
	"github.com/volplane/volplane/internal/csierror"
)

// The steps below never modify their arguments (they may come from an
// informer cache). Each returns a changed deep copy or a patch, or nil when
// the object already has the wanted state, so callers write only real
// changes. A crash between two steps is repaired by the next sync, which
// finds the earlier steps done (nil) and continues.

// jsonOp is one JSON Patch (RFC 6902) operation.
type jsonOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	Value any    `json:"value,omitempty"`
}

// VolumeFinalizerPatch is a JSON Patch adding the driver's finalizer to the
// PV, or nil if it is there. On a PV without finalizers it first tests that
// there still are none (the list is replaced whole, so a finalizer added
// meanwhile must make it fail); otherwise it appends, which is safe.
func VolumeFinalizerPatch(pv *v1.PersistentVolume, driver string) []byte {
	f := attachment.Finalizer(driver)
	if slices.Contains(pv.Finalizers, f) {
		return nil
	}
	var ops []jsonOp
	switch {
	case pv.Finalizers == nil:
		// Value nil is omitted by omitempty; "test" needs it spelled out.
		return mustJSON([]map[string]any{
			{"op": "test", "path": "/metadata/finalizers", "value": nil},
			{"op": "add", "path": "/metadata/finalizers", "value": []string{f}},
		})
	case len(pv.Finalizers) == 0:
		ops = []jsonOp{{Op: "test", Path: "/metadata/finalizers", Value: []string{}},
			{Op: "replace", Path: "/metadata/finalizers", Value: []string{f}}}
	default:
		ops = []jsonOp{{Op: "add", Path: "/metadata/finalizers/-", Value: f}}
	}
	return mustJSON(ops)
}

// VolumeFinalizerRemovalPatch is a JSON Patch removing the driver's
// finalizer from the PV, testing it is still at the index it was read at;
// nil if the PV does not have it.
func VolumeFinalizerRemovalPatch(pv *v1.PersistentVolume, driver string) []byte {
	i := slices.Index(pv.Finalizers, attachment.Finalizer(driver))
	if i < 0 {
		return nil
	}
	path := fmt.Sprintf("/metadata/finalizers/%d", i)
	return mustJSON([]jsonOp{{Op: "test", Path: path, Value: pv.Finalizers[i]}, {Op: "remove", Path: path}})
}

func mustJSON(v any) []byte {
	out, err := json.Marshal(v)
	if err != nil {
		panic(err) // slices and maps of strings always marshal
	}
	return out
}

// Annotated is the attachment with the driver's finalizer and the node-ID
// annotation, or nil if it has both.
func Annotated(va *storagev1.VolumeAttachment, nodeID string) *storagev1.VolumeAttachment {
	f := attachment.Finalizer(va.Spec.Attacher)
	hasF := slices.Contains(va.Finalizers, f)
	id, hasID := va.Annotations[attachment.NodeIDAnnotation]
	if hasF && hasID && id == nodeID {
		return nil
	}
	out := va.DeepCopy()
	if !hasF {
		out.Finalizers = append(out.Finalizers, f)
	}
	metav1.SetMetaDataAnnotation(&out.ObjectMeta, attachment.NodeIDAnnotation, nodeID)
	return out
}

// Attached is the attachment marked attached with the publish context and
// no attach error, or nil if it is already so.
func Attached(va *storagev1.VolumeAttachment, publishContext map[string]string) *storagev1.VolumeAttachment {
	if va.Status.Attached && va.Status.AttachError == nil && equalMaps(va.Status.AttachmentMetadata, publishContext) {
		return nil
	}
	out := va.DeepCopy()
	out.Status.Attached = true
	out.Status.AttachmentMetadata = publishContext
	out.Status.AttachError = nil
	return out
}

// WithoutFinalizer is the attachment without the driver's finalizer, or nil
// if it has none.
func WithoutFinalizer(va *storagev1.VolumeAttachment) *storagev1.VolumeAttachment {
	f := attachment.Finalizer(va.Spec.Attacher)
	if !slices.Contains(va.Finalizers, f) {
		return nil
	}
	out := va.DeepCopy()
	out.Finalizers = slices.DeleteFunc(out.Finalizers, func(s string) bool { return s == f })
	if len(out.Finalizers) == 0 {
		out.Finalizers = nil
	}
	return out
}

// Detached is the attachment's status once detached: not attached, no
// publish context, no detach error; nil if it is so already.
func Detached(va *storagev1.VolumeAttachment) *storagev1.VolumeAttachment {
	s := va.Status
	if !s.Attached && s.DetachError == nil && s.AttachmentMetadata == nil {
		return nil
	}
	out := va.DeepCopy()
	out.Status.Attached = false
	out.Status.DetachError = nil
	out.Status.AttachmentMetadata = nil
	return out
}

// WithError is the attachment with err saved in status.attachError, or in
// status.detachError for a Detach. An attach error carries the gRPC code
// the driver answered with (errorCode), a detach error none, as in the
// reference.
func WithError(va *storagev1.VolumeAttachment, err error, op Operation, now time.Time) *storagev1.VolumeAttachment {
	out := va.DeepCopy()
	ve := &storagev1.VolumeError{Message: err.Error(), Time: metav1.NewTime(now)}
	if op == Detach {
		out.Status.DetachError = ve
		return out
	}
	if c, ok := csierror.Code(err); ok {
		code := int32(c)
		ve.ErrorCode = &code
	}
	out.Status.AttachError = ve
	return out
}

// OnlyErrorsChanged says whether cur differs from old only in
// status.attachError / detachError (and the resourceVersion and managed
// fields that came with that write): our own error reports, which must not
// wake the attachment again and so undo its backoff.
func OnlyErrorsChanged(old, cur *storagev1.VolumeAttachment) bool {
	if old.ResourceVersion == cur.ResourceVersion {
		return false // a resync: always look again
	}
	o, c := old.Status, cur.Status
	if o.AttachError == nil && o.DetachError == nil && c.AttachError == nil && c.DetachError == nil {
		return false
	}
	s := cur.DeepCopy()
	s.ResourceVersion, s.ManagedFields = old.ResourceVersion, old.ManagedFields
	s.Status.AttachError, s.Status.DetachError = o.AttachError, o.DetachError
	return apiequality.Semantic.DeepEqual(old, s)
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
