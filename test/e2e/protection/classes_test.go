package protection

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/hostpath"
)

const vacProtection = "kubernetes.io/vac-protection"

// createClass makes a VolumeAttributesClass of the test's own; it is
// deleted after the test, its finalizer taken off if the test left it on.
func (e *env) createClass(name string) string {
	e.t.Helper()
	name = e.ns + "-" + name
	_, err := e.client.StorageV1().VolumeAttributesClasses().Create(e.ctx, &storagev1.VolumeAttributesClass{
		ObjectMeta: metav1.ObjectMeta{Name: name}, DriverName: hostpath.DriverName,
		Parameters: map[string]string{"tier": "gold"}}, metav1.CreateOptions{})
	e.noError(err, "create VolumeAttributesClass "+name)
	e.t.Cleanup(func() {
		if c := e.findClass(name); c != nil {
			c.Finalizers = nil
			_, _ = e.client.StorageV1().VolumeAttributesClasses().Update(e.ctx, c, metav1.UpdateOptions{})
			_ = e.client.StorageV1().VolumeAttributesClasses().Delete(e.ctx, name, metav1.DeleteOptions{})
		}
	})
	return name
}

func (e *env) findClass(name string) *storagev1.VolumeAttributesClass {
	e.t.Helper()
	c, err := e.client.StorageV1().VolumeAttributesClasses().Get(e.ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	e.noError(err, "get VolumeAttributesClass "+name)
	return c
}

// classState says what is wrong unless the class exists with the
// finalizer and, if deleting, is being deleted.
func (e *env) classState(name string, deleting bool) func() string {
	return func() string {
		c := e.findClass(name)
		switch {
		case c == nil:
			return "class " + name + " is gone"
		case !has(c.Finalizers, vacProtection):
			return fmt.Sprintf("class %s lacks %s: %v", name, vacProtection, c.Finalizers)
		case deleting != (c.DeletionTimestamp != nil):
			return fmt.Sprintf("class %s deleting since %v, want deleting %v", name, c.DeletionTimestamp, deleting)
		}
		return ""
	}
}

func (e *env) waitClassGone(name string) {
	e.t.Helper()
	e.eventually("class "+name+" gone", func() string {
		if c := e.findClass(name); c != nil {
			return fmt.Sprintf("still there, deleting since %v, finalizers %v", c.DeletionTimestamp, c.Finalizers)
		}
		return ""
	})
}

// A VolumeAttributesClass gets vac-protection's finalizer; deleted while a
// claim asks for it, it stays until the claim is gone.
func TestClassAClaimAsksForIsKeptUntilTheClaimGoes(t *testing.T) {
	e := newEnv(t)
	gold := e.createClass("gold")
	e.eventually("finalizer added", e.classState(gold, false))
	c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: e.ns}, Spec: claimSpec(classNone)}
	c.Spec.VolumeAttributesClassName = ptr.To(gold)
	_, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Create(e.ctx, c, metav1.CreateOptions{})
	e.noError(err, "create claim")

	e.noError(e.client.StorageV1().VolumeAttributesClasses().Delete(e.ctx, gold, metav1.DeleteOptions{}), "delete class")
	e.holds("class kept while the claim asks for it", keepFor, e.classState(gold, true))
	e.deleteClaim("data")
	e.waitClaimGone("data")
	e.waitClassGone(gold)
}

// A class a PV names is kept until the PV stops naming it; a class nothing
// names goes at once.
func TestClassAVolumeNamesIsKeptUntilTheVolumeGoes(t *testing.T) {
	e := newEnv(t)
	gold, unused := e.createClass("gold"), e.createClass("unused")
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: e.ns + "-gold"},
		Spec: corev1.PersistentVolumeSpec{
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: claimSpec("").Resources.Requests[corev1.ResourceStorage]},
			VolumeAttributesClassName:     ptr.To(gold),
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: hostpath.DriverName, VolumeHandle: "vac-" + e.ns}},
		},
	}
	_, err := e.client.CoreV1().PersistentVolumes().Create(e.ctx, pv, metav1.CreateOptions{})
	e.noError(err, "create PV")
	t.Cleanup(func() { _ = e.client.CoreV1().PersistentVolumes().Delete(e.ctx, pv.Name, metav1.DeleteOptions{}) })
	e.eventually("finalizers added", func() string {
		if s := e.classState(gold, false)(); s != "" {
			return s
		}
		return e.classState(unused, false)()
	})

	e.noError(e.client.StorageV1().VolumeAttributesClasses().Delete(e.ctx, gold, metav1.DeleteOptions{}), "delete class")
	e.noError(e.client.StorageV1().VolumeAttributesClasses().Delete(e.ctx, unused, metav1.DeleteOptions{}), "delete class")
	e.waitClassGone(unused)
	e.holds("class kept while the PV names it", keepFor, e.classState(gold, true))
	e.noError(e.client.CoreV1().PersistentVolumes().Delete(e.ctx, pv.Name, metav1.DeleteOptions{}), "delete PV")
	e.waitPVGone(pv.Name)
	e.waitClassGone(gold)
}
