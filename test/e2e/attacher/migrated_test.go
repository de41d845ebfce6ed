package attacher

import (
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/attachment"
)

// inTreeEBS makes a backend volume through the driver playing
// ebs.csi.aws.com and an in-tree awsElasticBlockStore PV over it (a bare
// volume ID is the CSI handle as it is, csi-translation-lib's
// KubernetesVolumeIDToEBSVolumeID), and the VolumeAttachment the
// reference's attach/detach controller makes for it: named after the
// translated handle and driver, naming the PV.
func (e *env) inTreeEBS() (*corev1.PersistentVolume, *storagev1.VolumeAttachment, string) {
	e.t.Helper()
	handle := createVolume(e.t, awsEBS, e.ns+"-ebs")
	pv, err := e.client.CoreV1().PersistentVolumes().Create(e.ctx, &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: e.ns + "-ebs"},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Mi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource: corev1.PersistentVolumeSource{AWSElasticBlockStore: &corev1.AWSElasticBlockStoreVolumeSource{
				VolumeID: handle, FSType: "ext4"}},
		}}, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("create PV: %v", err)
	}
	e.t.Cleanup(func() { e.forget(func() error { return e.dropPV(pv.Name) }) })
	va, err := e.client.StorageV1().VolumeAttachments().Create(e.ctx, &storagev1.VolumeAttachment{
		ObjectMeta: metav1.ObjectMeta{Name: attachment.Name(handle, awsEBS, bed.node)},
		Spec: storagev1.VolumeAttachmentSpec{Attacher: awsEBS, NodeName: bed.node,
			Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To(pv.Name)}}}, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("create VolumeAttachment: %v", err)
	}
	e.t.Cleanup(func() { e.forget(func() error { return e.dropVA(va.Name) }) })
	return pv, va, handle
}

// The attachment of an in-tree PV of a migrated plugin is published by
// the plugin's CSI driver with the translated source, as the
// external-attacher does: the PV keeps its in-tree source and gets the
// driver's finalizer; deleting the attachment unpublishes it.
func TestMigratedInTreePVIsPublishedByItsCSIDriver(t *testing.T) {
	e := newEnv(t)
	e.start(0)
	pv, va, handle := e.inTreeEBS()
	e.waitAttached(va.Name)
	fin := attachment.Finalizer(awsEBS)
	got := e.getPV(pv.Name)
	if !slices.Contains(got.Finalizers, fin) || got.Spec.AWSElasticBlockStore == nil || got.Spec.CSI != nil {
		t.Errorf("PV finalizers %v, source %+v: want %s on the in-tree PV, its source untouched", got.Finalizers, got.Spec.PersistentVolumeSource, fin)
	}
	if n := bed.calls.count("ControllerPublishVolume", handle); n != 1 {
		t.Errorf("ControllerPublishVolume of %s called %d times, want 1", handle, n)
	}
	if err := e.client.StorageV1().VolumeAttachments().Delete(e.ctx, va.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete VolumeAttachment: %v", err)
	}
	e.eventually("attachment detached and gone", func() string {
		if e.getVA(va.Name) != nil {
			return "still there"
		}
		return ""
	})
	if n := bed.calls.count("ControllerUnpublishVolume", handle); n != 1 {
		t.Errorf("ControllerUnpublishVolume of %s called %d times, want 1", handle, n)
	}
	// Made by hand, the PV has no migrated-to annotation: the
	// external-attacher gives it back once no attachment names it.
	e.eventually("PV finalizer removed", func() string {
		if got := e.getPV(pv.Name).Finalizers; slices.Contains(got, fin) {
			return fmt.Sprintf("finalizers %v", got)
		}
		return ""
	})
}

// A migrated PV that cannot be translated is refused with the
// external-attacher's text, and the driver is never called.
func TestUntranslatableMigratedPVIsRefusedWithTheReferenceText(t *testing.T) {
	e := newEnv(t)
	e.start(0)
	pv, err := e.client.CoreV1().PersistentVolumes().Create(e.ctx, &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: e.ns + "-bad"},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:    corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Mi")},
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{AWSElasticBlockStore: &corev1.AWSElasticBlockStoreVolumeSource{
				VolumeID: "aws://zone/not-a-volume"}},
		}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create PV: %v", err)
	}
	t.Cleanup(func() { e.forget(func() error { return e.dropPV(pv.Name) }) })
	va, err := e.client.StorageV1().VolumeAttachments().Create(e.ctx, &storagev1.VolumeAttachment{
		ObjectMeta: metav1.ObjectMeta{Name: e.ns + "-bad"},
		Spec: storagev1.VolumeAttachmentSpec{Attacher: awsEBS, NodeName: bed.node,
			Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To(pv.Name)}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create VolumeAttachment: %v", err)
	}
	t.Cleanup(func() { e.forget(func() error { return e.dropVA(va.Name) }) })
	want := "failed to translate in tree pv to CSI: failed to translate Kubernetes ID to EBS Volume ID Invalid format for AWS volume (aws://zone/not-a-volume)"
	e.eventually("the translation error saved", func() string {
		got := e.getVA(va.Name)
		if got == nil || got.Status.AttachError == nil || got.Status.AttachError.Message != want {
			return "status " + statusOf(got)
		}
		return ""
	})
	if got := e.getVA(va.Name); got.Status.Attached {
		t.Error("attached although untranslatable")
	}
}

func statusOf(va *storagev1.VolumeAttachment) string {
	if va == nil {
		return "gone"
	}
	if va.Status.AttachError == nil {
		return "no attachError"
	}
	return va.Status.AttachError.Message
}
