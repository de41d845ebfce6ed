package attacher

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/attachment"
	"github.com/volplane/volplane/internal/controller/attacher"
	"github.com/volplane/volplane/internal/stacktest"
)

// env is one test's world: a client to arrange and inspect, and the
// attacher under test.
type env struct {
	t      *testing.T
	ctx    context.Context
	client kubernetes.Interface
	ns     string // a fresh namespace: its name prefixes the test's objects
	loop   *stacktest.LoopRun
}

func newEnv(t *testing.T) *env {
	cp := stacktest.ControlPlane(t)
	e := &env{t: t, ctx: context.Background(), client: cp.Client, ns: stacktest.Namespace(t)}
	return e
}

// start runs an attacher until the test ends; crashAt > 0 stops it right
// after that many writes.
func (e *env) start(crashAt int) *stacktest.LoopRun {
	e.t.Helper()
	e.loop = stacktest.StartLoop(e.t, crashAt, func(d stacktest.LoopDeps) (interface{ Run(context.Context) error }, error) {
		return attacher.New(attacher.Config{Client: d.Client, Informers: d.Informers, Pool: bed.pool, Workers: 2})
	})
	return e.loop
}

// volume makes a backend volume of driver and a PV over it; finalizers are
// the PV's own on creation.
func (e *env) volume(driver string, finalizers ...string) (*corev1.PersistentVolume, string) {
	e.t.Helper()
	name := e.ns + "-pv"
	handle := createVolume(e.t, driver, name)
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name, Finalizers: finalizers},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Mi")},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: driver, VolumeHandle: handle, VolumeAttributes: map[string]string{"from": "test"}}},
		}}
	pv, err := e.client.CoreV1().PersistentVolumes().Create(e.ctx, pv, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("create PV: %v", err)
	}
	e.t.Cleanup(func() { e.forget(func() error { return e.dropPV(pv.Name) }) })
	return pv, handle
}

// attachment makes the VolumeAttachment the attach/detach controller
// would: named attachment.Name, no finalizers.
func (e *env) attachment(pv *corev1.PersistentVolume, node string) *storagev1.VolumeAttachment {
	e.t.Helper()
	driver := pv.Spec.CSI.Driver
	va := &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: attachment.Name(pv.Spec.CSI.VolumeHandle, driver, node)},
		Spec: storagev1.VolumeAttachmentSpec{Attacher: driver, NodeName: node,
			Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To(pv.Name)}}}
	va, err := e.client.StorageV1().VolumeAttachments().Create(e.ctx, va, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("create VolumeAttachment: %v", err)
	}
	e.t.Cleanup(func() { e.forget(func() error { return e.dropVA(va.Name) }) })
	return va
}

// forget runs a cleanup, reporting but not failing on errors.
func (e *env) forget(f func() error) {
	if err := f(); err != nil && !apierrors.IsNotFound(err) {
		e.t.Logf("cleanup: %v", err)
	}
}

// dropPV and dropVA delete an object whatever finalizers it carries.
func (e *env) dropPV(name string) error {
	patch := []byte(`{"metadata":{"finalizers":null}}`)
	if _, err := e.client.CoreV1().PersistentVolumes().Patch(e.ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return err
	}
	return e.client.CoreV1().PersistentVolumes().Delete(e.ctx, name, metav1.DeleteOptions{})
}

func (e *env) dropVA(name string) error {
	patch := []byte(`{"metadata":{"finalizers":null}}`)
	if _, err := e.client.StorageV1().VolumeAttachments().Patch(e.ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return err
	}
	return e.client.StorageV1().VolumeAttachments().Delete(e.ctx, name, metav1.DeleteOptions{})
}

func (e *env) getVA(name string) *storagev1.VolumeAttachment {
	e.t.Helper()
	va, err := e.client.StorageV1().VolumeAttachments().Get(e.ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		e.t.Fatalf("get VolumeAttachment: %v", err)
	}
	return va
}

func (e *env) getPV(name string) *corev1.PersistentVolume {
	e.t.Helper()
	pv, err := e.client.CoreV1().PersistentVolumes().Get(e.ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		e.t.Fatalf("get PV: %v", err)
	}
	return pv
}

func (e *env) eventually(what string, cond func() string) {
	e.t.Helper()
	stacktest.Eventually(e.t, what, cond, func() error {
		select {
		case <-e.loop.Ended():
			return fmt.Errorf("the attacher ended: %v", e.loop.Err())
		default:
			return nil
		}
	})
}

// waitAttached waits for status.attached and returns the attachment.
func (e *env) waitAttached(name string) *storagev1.VolumeAttachment {
	e.t.Helper()
	var va *storagev1.VolumeAttachment
	e.eventually("VolumeAttachment "+name+" attached", func() string {
		va = e.getVA(name)
		switch {
		case va == nil:
			return "gone"
		case !va.Status.Attached:
			return fmt.Sprintf("not attached; attachError %v", va.Status.AttachError)
		}
		return ""
	})
	return va
}

// count is how many times s occurs in list.
func count(list []string, s string) int {
	return len(slices.DeleteFunc(slices.Clone(list), func(x string) bool { return x != s }))
}

// serverMinor is the API server's minor version.
func (e *env) serverMinor() int {
	e.t.Helper()
	v, err := e.client.Discovery().ServerVersion()
	if err != nil {
		e.t.Fatal(err)
	}
	minor, err := strconv.Atoi(strings.TrimRight(v.Minor, "+"))
	if err != nil {
		e.t.Fatalf("server minor version %q: %v", v.Minor, err)
	}
	return minor
}
