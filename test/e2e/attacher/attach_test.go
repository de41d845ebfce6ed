package attacher

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/volplane/volplane/internal/attachment"
	"github.com/volplane/volplane/internal/stacktest"
)

var finalizer = attachment.Finalizer(attaching)

func TestFirstAttachProtectsThePVAnnotatesPublishesInThreeWrites(t *testing.T) {
	e := newEnv(t)
	r := e.start(0)
	pv, handle := e.volume(attaching)
	va := e.waitAttached(e.attachment(pv, bed.node).Name)
	if !slices.Equal(va.Finalizers, []string{finalizer}) || va.Annotations[attachment.NodeIDAnnotation] != bed.node {
		t.Errorf("VolumeAttachment finalizers %v, annotations %v", va.Finalizers, va.Annotations)
	}
	if va.Status.AttachError != nil || len(va.Status.AttachmentMetadata) != 0 {
		t.Errorf("status %+v; the driver's publish context is empty", va.Status)
	}
	if got := e.getPV(pv.Name).Finalizers; !slices.Contains(got, finalizer) {
		t.Errorf("PV finalizers %v, want %s", got, finalizer)
	}
	if n := bed.calls.count("ControllerPublishVolume", handle); n != 1 {
		t.Errorf("ControllerPublishVolume called %d times, want 1", n)
	}
	want := []string{
		"PATCH /api/v1/persistentvolumes/" + pv.Name,
		"PATCH /apis/storage.k8s.io/v1/volumeattachments/" + va.Name,
		"PATCH /apis/storage.k8s.io/v1/volumeattachments/" + va.Name + "/status",
	}
	e.writesSettle(r, pv.Name, va.Name, len(want))
	if got := r.Writes.About(pv.Name, va.Name); !slices.Equal(got, want) {
		t.Errorf("writes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// writesSettle waits until at least n writes about the PV and the
// attachment are logged: a write is logged when its answer reaches the
// attacher, which may be after the test has seen its effect.
func (e *env) writesSettle(r *stacktest.LoopRun, pv, va string, n int) {
	e.t.Helper()
	e.eventually(fmt.Sprintf("%d writes logged", n), func() string {
		if got := r.Writes.About(pv, va); len(got) < n {
			return fmt.Sprintf("%v", got)
		}
		return ""
	})
}

func TestFirstAttachOfAProtectedPVIsTwoWrites(t *testing.T) {
	e := newEnv(t)
	r := e.start(0)
	pv, _ := e.volume(attaching, finalizer)
	va := e.waitAttached(e.attachment(pv, bed.node).Name)
	e.writesSettle(r, pv.Name, va.Name, 2)
	if got := r.Writes.About(pv.Name, va.Name); len(got) != 2 || slices.ContainsFunc(got, func(w string) bool {
		return strings.Contains(w, "/persistentvolumes/")
	}) {
		t.Errorf("writes %v, want the attachment's two", got)
	}
}

func TestDeletedAttachmentIsUnpublishedThenReleased(t *testing.T) {
	e := newEnv(t)
	e.start(0)
	pv, handle := e.volume(attaching)
	va := e.waitAttached(e.attachment(pv, bed.node).Name)
	if err := e.client.StorageV1().VolumeAttachments().Delete(e.ctx, va.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("VolumeAttachment gone", func() string {
		if got := e.getVA(va.Name); got != nil {
			return fmt.Sprintf("still there: finalizers %v, detachError %v", got.Finalizers, got.Status.DetachError)
		}
		return ""
	})
	if n := bed.calls.count("ControllerUnpublishVolume", handle); n != 1 {
		t.Errorf("ControllerUnpublishVolume called %d times, want 1", n)
	}
}

// The API server can delete an attachment although our finalizer was
// added to it concurrently (kubernetes/kubernetes#77988). Here it is gone,
// finalizer and all, while the driver publishes: the attacher must not
// leave the volume attached to the node with no attachment to detach it.
func TestAttachmentDeletedDespiteItsFinalizerWhilePublishingIsUnpublished(t *testing.T) {
	e := newEnv(t)
	e.start(0)
	pv, handle := e.volume(attaching)
	name := ""
	bed.calls.onPublished(handle, func() {
		// As the racing delete does: the object goes, finalizer or not.
		patch := []byte(`{"metadata":{"finalizers":null}}`)
		if _, err := e.client.StorageV1().VolumeAttachments().Patch(e.ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Errorf("strip finalizers: %v", err)
		}
		if err := e.client.StorageV1().VolumeAttachments().Delete(e.ctx, name, metav1.DeleteOptions{}); err != nil {
			t.Errorf("delete: %v", err)
		}
	})
	t.Cleanup(func() { bed.calls.onPublished(handle, nil) })
	name = e.attachment(pv, bed.node).Name
	e.eventually("the publication withdrawn", func() string {
		if n := bed.calls.count("ControllerUnpublishVolume", handle); n != 1 {
			return fmt.Sprintf("ControllerUnpublishVolume called %d times", n)
		}
		return ""
	})
	if got := e.getVA(name); got != nil {
		t.Errorf("VolumeAttachment %s is back: %+v", name, got)
	}
	if n := bed.calls.count("ControllerPublishVolume", handle); n != 1 {
		t.Errorf("ControllerPublishVolume called %d times, want 1", n)
	}
}

func TestPVBeingDeletedKeepsItsFinalizerUntilNoAttachmentNamesIt(t *testing.T) {
	e := newEnv(t)
	e.start(0)
	pv, _ := e.volume(attaching)
	va := e.waitAttached(e.attachment(pv, bed.node).Name)
	if err := e.client.CoreV1().PersistentVolumes().Delete(e.ctx, pv.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	stacktest.Holds(t, "PV keeps the attacher's finalizer while attached", time.Second, func() string {
		if got := e.getPV(pv.Name); got == nil || !slices.Contains(got.Finalizers, finalizer) {
			return "the finalizer went while a VolumeAttachment names the PV"
		}
		return ""
	})
	if err := e.client.StorageV1().VolumeAttachments().Delete(e.ctx, va.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("PV without the attacher's finalizer", func() string {
		if got := e.getPV(pv.Name); got != nil && slices.Contains(got.Finalizers, finalizer) {
			return fmt.Sprintf("finalizers %v; attachment there: %t", got.Finalizers, e.getVA(va.Name) != nil)
		}
		return ""
	})
}

func TestDriverErrorIsSavedWithItsCodeThenRetriedToSuccess(t *testing.T) {
	e := newEnv(t)
	e.start(0)
	pv, handle := e.volume(attaching)
	bed.calls.failPublish(handle, errUnavailable)
	t.Cleanup(func() { bed.calls.failPublish(handle, nil) })
	name := e.attachment(pv, bed.node).Name
	// The API server keeps errorCode only with MutableCSINodeAllocatableCount,
	// on by default from 1.35: a 1.34 server (tools/compat) drops it.
	keepsCode := e.serverMinor() >= 35
	e.eventually("attachError saved", func() string {
		va := e.getVA(name)
		ae := va.Status.AttachError
		switch {
		case ae == nil:
			return "no attachError"
		case ae.Message != errUnavailable.Error():
			return "message " + ae.Message
		case keepsCode && (ae.ErrorCode == nil || *ae.ErrorCode != int32(codes.ResourceExhausted)):
			return fmt.Sprintf("errorCode %v", ae.ErrorCode)
		case !keepsCode && ae.ErrorCode != nil:
			return fmt.Sprintf("errorCode %v kept by a server that drops it", ae.ErrorCode)
		case va.Status.Attached:
			return "attached despite the error"
		}
		return ""
	})
	bed.calls.failPublish(handle, nil)
	va := e.waitAttached(name)
	if va.Status.AttachError != nil {
		t.Errorf("attachError %v stayed after the attach succeeded", va.Status.AttachError)
	}
	if n := bed.calls.count("ControllerPublishVolume", handle); n < 2 {
		t.Errorf("ControllerPublishVolume called %d times, want the failures and the success", n)
	}
}

func TestMissingNodeIDIsSavedWithTheReferenceText(t *testing.T) {
	e := newEnv(t)
	e.start(0)
	withoutDriver := e.ns + "-other-driver-only"
	node := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: withoutDriver}, Spec: storagev1.CSINodeSpec{
		Drivers: []storagev1.CSINodeDriver{{Name: nonAttaching, NodeID: "x"}}}}
	if _, err := e.client.StorageV1().CSINodes().Create(e.ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.client.StorageV1().CSINodes().Delete(e.ctx, withoutDriver, metav1.DeleteOptions{}) })
	pv, handle := e.volume(attaching)
	for node, want := range map[string]string{
		e.ns + "-no-csinode": fmt.Sprintf("csinode.storage.k8s.io %q not found", e.ns+"-no-csinode"),
		withoutDriver:        fmt.Sprintf("CSINode %s does not contain driver %s", withoutDriver, attaching),
	} {
		name := e.attachment(pv, node).Name
		e.eventually("attachError on "+node, func() string {
			ae := e.getVA(name).Status.AttachError
			switch {
			case ae == nil:
				return "no attachError"
			case ae.Message != want:
				return "message " + ae.Message
			case ae.ErrorCode != nil:
				return fmt.Sprintf("errorCode %d on a local error", *ae.ErrorCode)
			}
			return ""
		})
	}
	if n := bed.calls.count("ControllerPublishVolume", handle); n != 0 {
		t.Errorf("ControllerPublishVolume called %d times without a node ID", n)
	}
}

func TestDriverWithoutPublishIsOnlyMarkedAttached(t *testing.T) {
	e := newEnv(t)
	r := e.start(0)
	pv, handle := e.volume(nonAttaching)
	va := e.waitAttached(e.attachment(pv, bed.node).Name)
	if len(va.Finalizers) != 0 || va.Annotations[attachment.NodeIDAnnotation] != "" {
		t.Errorf("finalizers %v, annotations %v; want none", va.Finalizers, va.Annotations)
	}
	if got := e.getPV(pv.Name).Finalizers; slices.Contains(got, attachment.Finalizer(nonAttaching)) {
		t.Errorf("PV finalizers %v", got)
	}
	if n := bed.calls.count("ControllerPublishVolume", handle); n != 0 {
		t.Errorf("ControllerPublishVolume called %d times", n)
	}
	e.writesSettle(r, pv.Name, va.Name, 1)
	if got := r.Writes.About(pv.Name, va.Name); len(got) != 1 {
		t.Errorf("writes %v, want the one status write", got)
	}
}

func TestRestartAfterAFinalizerWriteFinishesWithOneFinalizer(t *testing.T) {
	for _, crashAt := range []int{1, 2} { // after the PV's finalizer, after the attachment's
		t.Run(fmt.Sprintf("stopped after write %d", crashAt), func(t *testing.T) {
			e := newEnv(t)
			first := e.start(crashAt)
			pv, handle := e.volume(attaching)
			name := e.attachment(pv, bed.node).Name
			select {
			case <-first.Ended():
			case <-time.After(stacktest.WaitTimeout):
				t.Fatal("the first attacher did not stop at its crash point")
			}
			if w := first.Writes.About(pv.Name, name); len(w) < crashAt {
				t.Fatalf("the first attacher stopped after %v", w)
			}
			e.start(0)
			va := e.waitAttached(name)
			if n := count(va.Finalizers, finalizer); n != 1 {
				t.Errorf("attachment finalizers %v", va.Finalizers)
			}
			if n := count(e.getPV(pv.Name).Finalizers, finalizer); n != 1 {
				t.Errorf("PV finalizers %v", e.getPV(pv.Name).Finalizers)
			}
			if n := bed.calls.count("ControllerPublishVolume", handle); n < 1 {
				t.Error("never published")
			}
		})
	}
}
