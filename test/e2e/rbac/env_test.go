package rbac

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/volplane/volplane/test/e2e/support"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/kubectl/pkg/util/podutils"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/stacktest"
)

// env is the lifecycle's world: the admin client (the user and the
// kubelet), a namespace, and a check that every loop still runs.
type env struct {
	t      *testing.T
	ctx    context.Context
	client kubernetes.Interface
	ns     string
	alive  func() error
}

func (e *env) eventually(what string, cond func() string) {
	e.t.Helper()
	stacktest.Eventually(e.t, what, cond, e.alive)
}

// claim creates a claim of 1Gi of class ("" for no class), adjusted by
// each opt.
func (e *env) claim(name, class string, opts ...func(*corev1.PersistentVolumeClaim)) {
	e.t.Helper()
	c := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: ptr.To(class),
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	for _, opt := range opts {
		opt(c)
	}
	if _, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Create(e.ctx, c, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// pod creates a pod on node using claim.
func (e *env) pod(name, node, claim string) {
	e.t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"kubernetes.io/hostname": node},
			Containers: []corev1.Container{{Name: "app", Image: "busybox:1.37",
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}},
		},
	}
	if _, err := e.client.CoreV1().Pods(e.ns).Create(e.ctx, p, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

// running waits until the pod is Running and Ready.
func (e *env) running(name string) {
	e.t.Helper()
	e.eventually("pod "+name+" Running and Ready", func() string {
		p, err := e.client.CoreV1().Pods(e.ns).Get(e.ctx, name, metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		if p.Status.Phase == corev1.PodRunning && podutils.IsPodReady(p) {
			return ""
		}
		return fmt.Sprintf("phase %s; events %s", p.Status.Phase, e.events(name))
	})
}

// bound waits until the claim is Bound and returns its PV's name.
func (e *env) bound(claim string) string {
	e.t.Helper()
	var pv string
	e.eventually("claim "+claim+" Bound", func() string {
		c, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Get(e.ctx, claim, metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		if c.Status.Phase != corev1.ClaimBound {
			return fmt.Sprintf("phase %s; events %s", c.Status.Phase, e.events(claim))
		}
		pv = c.Spec.VolumeName
		return ""
	})
	return pv
}

// grow raises the claim's request to size and waits until its capacity is
// size with nothing of the resize left on it.
func (e *env) grow(claim, size string) {
	e.t.Helper()
	patch := fmt.Appendf(nil, `{"spec":{"resources":{"requests":{"storage":%q}}}}`, size)
	if _, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Patch(e.ctx, claim, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		e.t.Fatal(err)
	}
	e.eventually("claim "+claim+" grown to "+size, func() string {
		c, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Get(e.ctx, claim, metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		got := c.Status.Capacity[corev1.ResourceStorage]
		if got.Cmp(resource.MustParse(size)) != 0 || len(c.Status.AllocatedResourceStatuses) != 0 || len(support.ConditionsBesidesUnused(c)) != 0 {
			return fmt.Sprintf("capacity %s, statuses %v, conditions %v; events %s",
				got.String(), c.Status.AllocatedResourceStatuses, c.Status.Conditions, e.events(claim))
		}
		return ""
	})
}

// modify sets the claim's VolumeAttributesClass and waits until the
// claim reports it current, with no modification in flight.
func (e *env) modify(claim, class string) {
	e.t.Helper()
	patch := fmt.Appendf(nil, `{"spec":{"volumeAttributesClassName":%q}}`, class)
	if _, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Patch(e.ctx, claim, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		e.t.Fatal(err)
	}
	e.attributes(claim, class)
}

// attributes waits until the claim reports class as its current
// VolumeAttributesClass, with no modification in flight.
func (e *env) attributes(claim, class string) {
	e.t.Helper()
	e.eventually("claim "+claim+" at "+class, func() string {
		c, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Get(e.ctx, claim, metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		if cur := c.Status.CurrentVolumeAttributesClassName; cur == nil || *cur != class || c.Status.ModifyVolumeStatus != nil {
			return fmt.Sprintf("current %v, modify %+v; events %s", cur, c.Status.ModifyVolumeStatus, e.events(claim))
		}
		return ""
	})
}

// gone deletes an object (pod, claim or PV) and waits until it is gone:
// the finalizers the loops hold must come off.
func (e *env) gone(kind, name string) {
	e.t.Helper()
	var del func() error
	var get func() error
	switch kind {
	case "pod":
		del = func() error { return e.client.CoreV1().Pods(e.ns).Delete(e.ctx, name, metav1.DeleteOptions{}) }
		get = func() error { _, err := e.client.CoreV1().Pods(e.ns).Get(e.ctx, name, metav1.GetOptions{}); return err }
	case "claim":
		del = func() error {
			return e.client.CoreV1().PersistentVolumeClaims(e.ns).Delete(e.ctx, name, metav1.DeleteOptions{})
		}
		get = func() error {
			_, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Get(e.ctx, name, metav1.GetOptions{})
			return err
		}
	case "pv":
		del = func() error { return e.client.CoreV1().PersistentVolumes().Delete(e.ctx, name, metav1.DeleteOptions{}) }
		get = func() error {
			_, err := e.client.CoreV1().PersistentVolumes().Get(e.ctx, name, metav1.GetOptions{})
			return err
		}
	}
	if err := del(); err != nil && !apierrors.IsNotFound(err) {
		e.t.Fatal(err)
	}
	e.waitGone(kind, name, get)
}

func (e *env) waitGone(kind, name string, get func() error) {
	e.t.Helper()
	e.eventually(kind+" "+name+" gone", func() string {
		if err := get(); !apierrors.IsNotFound(err) {
			return fmt.Sprintf("still there (%v)", err)
		}
		return ""
	})
}

// terminating fails unless the claim is still there, deleted but held by
// its protection finalizer.
func (e *env) terminating(claim string) {
	e.t.Helper()
	c, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Get(e.ctx, claim, metav1.GetOptions{})
	if err != nil || c.DeletionTimestamp == nil || !slices.Contains(c.Finalizers, "kubernetes.io/pvc-protection") {
		e.t.Fatalf("claim %s in use: %v, want it Terminating under kubernetes.io/pvc-protection", claim, err)
	}
}

// released waits until the PV is Released (its claim gone, policy Retain).
func (e *env) released(pv string) {
	e.t.Helper()
	e.eventually("PV "+pv+" Released", func() string {
		v, err := e.client.CoreV1().PersistentVolumes().Get(e.ctx, pv, metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		if v.Status.Phase != corev1.VolumeReleased {
			return fmt.Sprintf("phase %s", v.Status.Phase)
		}
		return ""
	})
}

// recycle finishes the recycler pod of a Released PV of policy Recycle as
// a kubelet would (Succeeded) and waits until the PV is Available and the
// pod gone.
func (e *env) recycle(pv string) {
	e.t.Helper()
	pods := e.client.CoreV1().Pods(metav1.NamespaceDefault)
	name := "recycler-for-" + pv
	e.eventually("recycler pod "+name+" Succeeded", func() string {
		pod, err := pods.Get(e.ctx, name, metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		pod.Status.Phase = corev1.PodSucceeded
		if _, err := pods.UpdateStatus(e.ctx, pod, metav1.UpdateOptions{}); err != nil {
			return err.Error()
		}
		return ""
	})
	e.eventually("PV "+pv+" Available", func() string {
		v, err := e.client.CoreV1().PersistentVolumes().Get(e.ctx, pv, metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		if v.Status.Phase != corev1.VolumeAvailable {
			return fmt.Sprintf("phase %s; events %s", v.Status.Phase, e.events(pv))
		}
		return ""
	})
	e.waitGone("pod", name, func() error { _, err := pods.Get(e.ctx, name, metav1.GetOptions{}); return err })
}

// events are the events about an object, "reason: message; ...".
func (e *env) events(name string) string {
	list, err := e.client.CoreV1().Events(e.ns).List(e.ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, ev := range list.Items {
		out = append(out, ev.Reason+": "+ev.Message)
	}
	return strings.Join(out, "; ")
}

// ephemeral creates a pod on node whose generic ephemeral volume "scratch"
// is of class, and waits until the claim ephemeral-volume makes for it,
// "<name>-scratch", is Bound; it returns the claim's name.
func (e *env) ephemeral(name, node, class string) string {
	e.t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"kubernetes.io/hostname": node},
			Containers: []corev1.Container{{Name: "app", Image: "busybox:1.37",
				VolumeMounts: []corev1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}}},
			Volumes: []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
				VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{Spec: corev1.PersistentVolumeClaimSpec{
					StorageClassName: ptr.To(class), AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}}}}},
		},
	}
	if _, err := e.client.CoreV1().Pods(e.ns).Create(e.ctx, p, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	claim := name + "-scratch"
	e.bound(claim)
	return claim
}

// classGone deletes a VolumeAttributesClass nothing uses any more and waits
// until vac-protection lets it go.
func (e *env) classGone(name string) {
	e.t.Helper()
	if err := e.client.StorageV1().VolumeAttributesClasses().Delete(e.ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		e.t.Fatal(err)
	}
	e.waitGone("VolumeAttributesClass", name, func() error {
		_, err := e.client.StorageV1().VolumeAttributesClasses().Get(e.ctx, name, metav1.GetOptions{})
		return err
	})
}
