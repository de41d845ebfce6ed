package ephemeral

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/stacktest"
	"github.com/volplane/volplane/test/e2e/support"
)

// keepFor is how long a state that must not change is watched: several
// retries of the loop and one safety-net resync.
const keepFor = 3 * time.Second

type env struct {
	t      *testing.T
	ctx    context.Context
	client kubernetes.Interface
	ns     string
}

func newEnv(t *testing.T) *env {
	return &env{t: t, ctx: context.Background(), client: stacktest.ControlPlane(t).Client, ns: stacktest.Namespace(t)}
}

func (e *env) alive() error { return bed.loops.EndedEarly() }

func (e *env) eventually(what string, cond func() string) {
	e.t.Helper()
	stacktest.Eventually(e.t, what, cond, e.alive)
}

func (e *env) noError(err error, what string) {
	e.t.Helper()
	if err != nil {
		e.t.Fatalf("%s: %v", what, err)
	}
}

// template is a claim template of a class that does not exist.
func template(labels map[string]string) *corev1.PersistentVolumeClaimTemplate {
	return &corev1.PersistentVolumeClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: map[string]string{"example.com/note": "from the template"}},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To("no-such-class"),
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Mi")}}},
	}
}

// newPod is an unscheduled pod with a generic ephemeral volume per name.
func (e *env) newPod(name string, volumes ...string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.invalid/app"}}}}
	for _, v := range volumes {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: v, VolumeSource: corev1.VolumeSource{
			Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: template(map[string]string{"volume": v})}}})
	}
	return p
}

func (e *env) createPod(p *corev1.Pod) *corev1.Pod {
	e.t.Helper()
	out, err := e.client.CoreV1().Pods(e.ns).Create(e.ctx, p, metav1.CreateOptions{})
	e.noError(err, "create pod "+p.Name)
	return out
}

func (e *env) findClaim(name string) *corev1.PersistentVolumeClaim {
	e.t.Helper()
	c, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Get(e.ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	e.noError(err, "get claim "+name)
	return c
}

// ownedBy says what is wrong unless the claim exists, is controlled by the
// pod (blocking its deletion) and carries the template's metadata.
func (e *env) ownedBy(name string, pod *corev1.Pod, volume string) func() string {
	return func() string {
		c := e.findClaim(name)
		if c == nil {
			return "no claim " + name
		}
		ref := metav1.GetControllerOf(c)
		switch {
		case ref == nil || ref.UID != pod.UID || ref.Kind != "Pod" || ref.Name != pod.Name:
			return fmt.Sprintf("claim %s controlled by %+v, want pod %s (%s)", name, ref, pod.Name, pod.UID)
		case !ptr.Deref(ref.BlockOwnerDeletion, false):
			return "the owner reference does not block the pod's deletion"
		case c.Labels["volume"] != volume || c.Annotations["example.com/note"] != "from the template":
			return fmt.Sprintf("claim %s metadata: labels %v annotations %v", name, c.Labels, c.Annotations)
		case ptr.Deref(c.Spec.StorageClassName, "") != "no-such-class":
			return fmt.Sprintf("claim %s spec %+v", name, c.Spec)
		}
		return ""
	}
}

// Each generic ephemeral volume of a pod gets its claim "<pod>-<volume>",
// controlled by the pod, from its template; the garbage collector deletes
// them with the pod.
func TestEachEphemeralVolumeGetsAClaimOwnedByThePod(t *testing.T) {
	e := newEnv(t)
	pod := e.createPod(e.newPod("app", "scratch", "cache"))
	e.eventually("claims of both volumes", func() string {
		if s := e.ownedBy("app-scratch", pod, "scratch")(); s != "" {
			return s
		}
		return e.ownedBy("app-cache", pod, "cache")()
	})
	e.noError(e.client.CoreV1().Pods(e.ns).Delete(e.ctx, "app", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}), "delete pod")
	e.eventually("claims gone with the pod", func() string {
		for _, n := range []string{"app-scratch", "app-cache"} {
			if c := e.findClaim(n); c != nil {
				return fmt.Sprintf("claim %s still there, finalizers %v", n, c.Finalizers)
			}
		}
		return ""
	})
}

// A claim deleted while its pod lives is made again.
func TestAClaimDeletedWhileItsPodLivesComesBack(t *testing.T) {
	e := newEnv(t)
	pod := e.createPod(e.newPod("app", "scratch"))
	e.eventually("claim made", e.ownedBy("app-scratch", pod, "scratch"))
	first := e.findClaim("app-scratch").UID
	e.noError(e.client.CoreV1().PersistentVolumeClaims(e.ns).Delete(e.ctx, "app-scratch", metav1.DeleteOptions{}), "delete claim")
	e.eventually("claim made again", func() string {
		if c := e.findClaim("app-scratch"); c == nil || c.UID == first {
			return "not made again yet"
		}
		return e.ownedBy("app-scratch", pod, "scratch")()
	})
}

// A hostile user pre-creates a claim under the name a pod's ephemeral
// volume will use, with an owner reference forged by the pod's name (its
// UID cannot be known beforehand). The loop never adopts or touches it:
// the pod gets the reference's FailedBinding warning, its later volumes
// wait, and once the claim is deleted the pod gets a claim of its own.
func TestAPreCreatedClaimIsNeverAdoptedOrTouched(t *testing.T) {
	e := newEnv(t)
	forged := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "app-scratch", Namespace: e.ns,
		Labels: map[string]string{"planted": "yes"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "app", UID: types.UID("guessed-uid"),
			Controller: ptr.To(true)}}},
		Spec: template(nil).Spec}
	planted, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Create(e.ctx, forged, metav1.CreateOptions{})
	e.noError(err, "plant claim")
	// The garbage collector deletes a claim whose owner does not exist;
	// the pod is created at once, as a hostile user racing it would.
	pod := e.createPod(e.newPod("app", "scratch", "later"))

	support.WaitEvent(t, e.client, e.alive, e.ns, "app", "FailedBinding",
		fmt.Sprintf("ephemeral volume scratch: PVC %s/app-scratch was not created for pod %s/app (pod is not owner)", e.ns, e.ns))
	if c := e.findClaim("app-scratch"); c != nil && c.UID == planted.UID {
		if !reflect.DeepEqual(c.OwnerReferences, planted.OwnerReferences) || c.Labels["planted"] != "yes" {
			t.Errorf("the planted claim was changed: owners %+v labels %v", c.OwnerReferences, c.Labels)
		}
		if e.findClaim("app-later") != nil {
			t.Error("the volume after the conflicting one got its claim")
		}
	}
	// Once the planted claim is gone (deleted by the garbage collector,
	// its owner does not exist, or by us), the pod gets its own.
	_ = e.client.CoreV1().PersistentVolumeClaims(e.ns).Delete(e.ctx, "app-scratch", metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &planted.UID}})
	e.eventually("the pod's own claims", func() string {
		if s := e.ownedBy("app-scratch", pod, "scratch")(); s != "" {
			return s
		}
		return e.ownedBy("app-later", pod, "later")()
	})
}

// A template may not name another namespace (or any metadata but labels
// and annotations): the API server refuses such a pod, and no claim is
// made anywhere.
func TestATemplateNamingAnotherNamespaceIsRefused(t *testing.T) {
	e := newEnv(t)
	victim := stacktest.Namespace(t)
	p := e.newPod("app", "scratch")
	p.Spec.Volumes[0].Ephemeral.VolumeClaimTemplate.Namespace = victim
	_, err := e.client.CoreV1().Pods(e.ns).Create(e.ctx, p, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Fatalf("pod with a template in namespace %s: %v, want Invalid", victim, err)
	}
	stacktest.Holds(t, "no claim anywhere", keepFor, func() string {
		for _, ns := range []string{e.ns, victim} {
			list, err := e.client.CoreV1().PersistentVolumeClaims(ns).List(e.ctx, metav1.ListOptions{})
			if err != nil {
				return err.Error()
			}
			if len(list.Items) > 0 {
				return fmt.Sprintf("claims in %s: %d", ns, len(list.Items))
			}
		}
		return ""
	})
}
