package growing

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/kubectl/pkg/util/podutils"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/cluster/clustertest"
)

// env is one test's world: a client and a namespace.
type env struct {
	t      *testing.T
	ctx    context.Context
	client kubernetes.Interface
	ns     string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	return &env{t: t, ctx: context.Background(), client: stack.CP.Client, ns: clustertest.Namespace(t)}
}

func (e *env) eventually(what string, cond func() string) {
	e.t.Helper()
	clustertest.Eventually(e.t, what, cond, stack.EndedEarly)
}

// claim creates a 1Gi ReadWriteOnce claim of class and waits until it is
// Bound.
func (e *env) claim(name, class string) {
	e.t.Helper()
	c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To(class),
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}}}
	if _, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Create(e.ctx, c, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	e.eventually("claim "+name+" Bound", func() string {
		if p := e.getClaim(name).Status.Phase; p != corev1.ClaimBound {
			return "phase " + string(p)
		}
		return ""
	})
}

// grow raises the claim's request to size, as a user would.
func (e *env) grow(name, size string) {
	e.t.Helper()
	patch := fmt.Sprintf(`{"spec":{"resources":{"requests":{"storage":%q}}}}`, size)
	if _, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Patch(e.ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		e.t.Fatalf("grow %s: %v", name, err)
	}
}

// pod creates a pod on the node using the claim and waits until it runs.
func (e *env) pod(name, claim string) {
	e.t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns}, Spec: corev1.PodSpec{
		NodeSelector: map[string]string{"kubernetes.io/hostname": stack.CP.Nodes[0]},
		Containers: []corev1.Container{{Name: "app", Image: "busybox:1.37",
			VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
		Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}}}
	if _, err := e.client.CoreV1().Pods(e.ns).Create(e.ctx, p, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
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

func (e *env) getClaim(name string) *corev1.PersistentVolumeClaim {
	e.t.Helper()
	c, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

// waitGrown waits until the claim reports size with nothing of an
// expansion left, and its PV holds size too.
func (e *env) waitGrown(name, size string) {
	e.t.Helper()
	want := resource.MustParse(size)
	e.eventually("claim "+name+" grown to "+size, func() string {
		c := e.getClaim(name)
		s := c.Status
		if s.Capacity.Storage().Cmp(want) != 0 || s.AllocatedResourceStatuses != nil || len(s.Conditions) != 0 {
			return fmt.Sprintf("capacity %s, resize status %v, conditions %v; events %s",
				s.Capacity.Storage().String(), s.AllocatedResourceStatuses, s.Conditions, e.events(name))
		}
		pv, err := e.client.CoreV1().PersistentVolumes().Get(e.ctx, c.Spec.VolumeName, metav1.GetOptions{})
		if err != nil || pv.Spec.Capacity.Storage().Cmp(want) != 0 {
			return fmt.Sprintf("PV %v %v", pv.Spec.Capacity, err)
		}
		return ""
	})
}

// events are "<source> <reason>" of the object's events, in the test's
// namespace.
func (e *env) events(name string) string {
	list, err := e.client.CoreV1().Events(e.ns).List(e.ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, ev := range list.Items {
		out = append(out, ev.Source.Component+" "+ev.Reason)
	}
	return "[" + strings.Join(out, "; ") + "]"
}

// waitEvents waits until the object has an event of each "<source>
// <reason>".
func (e *env) waitEvents(name string, want ...string) {
	e.t.Helper()
	e.eventually("events of "+name, func() string {
		got := e.events(name)
		for _, w := range want {
			if !strings.Contains(got, w) {
				return fmt.Sprintf("%s, want %q", got, want)
			}
		}
		return ""
	})
}
