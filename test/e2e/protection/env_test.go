package protection

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/stacktest"
	"github.com/volplane/volplane/test/e2e/support"
)

// The finalizers, as users see them.
const (
	pvcProtection = "kubernetes.io/pvc-protection"
	pvProtection  = "kubernetes.io/pv-protection"
)

// env is one test's world: a client and a namespace; PVs the test makes
// are deleted after it.
type env struct {
	t      *testing.T
	ctx    context.Context
	client kubernetes.Interface
	ns     string
	node   string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	cp := stacktest.ControlPlane(t)
	e := &env{t: t, ctx: context.Background(), client: cp.Client, ns: stacktest.Namespace(t), node: cp.Nodes[0]}
	t.Cleanup(e.removePods)
	return e
}

// other is an env for a second namespace of the same test.
func (e *env) other() *env {
	o := *e
	o.ns = stacktest.Namespace(e.t)
	e.t.Cleanup(o.removePods)
	return &o
}

// eventually polls cond until it returns "" and fails the test with the
// last description of what was still wrong otherwise.
func (e *env) eventually(what string, cond func() string) {
	e.t.Helper()
	stacktest.Eventually(e.t, what, cond, func() error {
		if err := bed.loops.EndedEarly(); err != nil {
			return fmt.Errorf("the loops %v", err)
		}
		return nil
	})
}

// holds asserts cond keeps returning "" for d: for states that must not
// change. The loops get several chances to act wrongly meanwhile.
func (e *env) holds(what string, d time.Duration, cond func() string) {
	e.t.Helper()
	stacktest.Holds(e.t, what, d, cond)
}

func (e *env) noError(err error, what string) {
	e.t.Helper()
	if err != nil {
		e.t.Fatalf("%s: %v", what, err)
	}
}

// Claims.

func (e *env) createClaim(name, class string) *corev1.PersistentVolumeClaim {
	e.t.Helper()
	c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns}, Spec: claimSpec(class)}
	out, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Create(e.ctx, c, metav1.CreateOptions{})
	e.noError(err, "create claim "+name)
	return out
}

func claimSpec(class string) corev1.PersistentVolumeClaimSpec {
	return support.Claim("", "", class, "1Mi").Spec
}

// findClaim returns the claim, or nil if it does not exist.
func (e *env) findClaim(name string) *corev1.PersistentVolumeClaim {
	e.t.Helper()
	c, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Get(e.ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	e.noError(err, "get claim "+name)
	return c
}

func (e *env) deleteClaim(name string) {
	e.t.Helper()
	e.noError(e.client.CoreV1().PersistentVolumeClaims(e.ns).Delete(e.ctx, name, metav1.DeleteOptions{}), "delete claim "+name)
}

func (e *env) waitClaimGone(name string) {
	e.t.Helper()
	e.eventually("claim "+name+" gone", func() string {
		if c := e.findClaim(name); c != nil {
			return fmt.Sprintf("still there, deleting since %v, finalizers %v", c.DeletionTimestamp, c.Finalizers)
		}
		return ""
	})
}

// claimKept says what is wrong unless the claim exists, is being deleted
// and still has its pvc-protection finalizer.
func (e *env) claimKept(name string) func() string {
	return func() string {
		c := e.findClaim(name)
		switch {
		case c == nil:
			return "claim " + name + " is gone"
		case c.DeletionTimestamp == nil:
			return "claim " + name + " is not being deleted"
		case !slices.Contains(c.Finalizers, pvcProtection):
			return fmt.Sprintf("claim %s lost %s: finalizers %v", name, pvcProtection, c.Finalizers)
		}
		return ""
	}
}

// Volumes.

func (e *env) findPV(name string) *corev1.PersistentVolume {
	e.t.Helper()
	pv, err := e.client.CoreV1().PersistentVolumes().Get(e.ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	e.noError(err, "get PV "+name)
	return pv
}

func (e *env) waitPVGone(name string) {
	e.t.Helper()
	e.eventually("PV "+name+" gone", func() string {
		if pv := e.findPV(name); pv != nil {
			return fmt.Sprintf("still there: phase %s, deleting since %v, finalizers %v", pv.Status.Phase, pv.DeletionTimestamp, pv.Finalizers)
		}
		return ""
	})
}

// waitBound waits until the claim is Bound and returns it and its PV.
func (e *env) waitBound(name string) (*corev1.PersistentVolumeClaim, *corev1.PersistentVolume) {
	e.t.Helper()
	var (
		c  *corev1.PersistentVolumeClaim
		pv *corev1.PersistentVolume
	)
	e.eventually("claim "+name+" Bound", func() string {
		c = e.findClaim(name)
		if c == nil || c.Status.Phase != corev1.ClaimBound {
			return fmt.Sprintf("claim %v", c)
		}
		if pv = e.findPV(c.Spec.VolumeName); pv == nil || pv.Status.Phase != corev1.VolumeBound {
			return fmt.Sprintf("PV %s not Bound", c.Spec.VolumeName)
		}
		return ""
	})
	return c, pv
}

// Pods. No kubelet runs; a pod given a node is scheduled there.

type podOpt func(*corev1.Pod)

// createPod creates a pod of the test's namespace, scheduled on the first
// node unless an option says otherwise.
func (e *env) createPod(name string, opts ...podOpt) *corev1.Pod {
	e.t.Helper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns},
		Spec: corev1.PodSpec{NodeName: e.node,
			Containers: []corev1.Container{{Name: "app", Image: "registry.invalid/app"}}},
	}
	for _, o := range opts {
		o(p)
	}
	out, err := e.client.CoreV1().Pods(e.ns).Create(e.ctx, p, metav1.CreateOptions{})
	e.noError(err, "create pod "+name)
	return out
}

func usingClaim(claim string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: "data",
			VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}})
	}
}

// withEphemeral adds a generic ephemeral volume; the ephemeral-volume loop
// makes its claim, "<pod>-<volume>", controlled by the pod.
func withEphemeral(volume, class string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: volume, VolumeSource: corev1.VolumeSource{
			Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{Spec: claimSpec(class)}}}})
	}
}

// unscheduled leaves the pod for the scheduler, which cannot place a pod
// whose claim is unbound and being deleted.
func unscheduled(p *corev1.Pod) { p.Spec.NodeName = "" }

// heldBy puts a finalizer of the test's own on the pod, so that it outlives
// its deletion.
func heldBy(f string) podOpt {
	return func(p *corev1.Pod) { p.Finalizers = append(p.Finalizers, f) }
}

// setPhase writes the pod's phase, as its kubelet would.
func (e *env) setPhase(name string, phase corev1.PodPhase) {
	e.t.Helper()
	// The scheduler writes the pod's status too (its PodScheduled
	// condition): on a conflict, read the pod again.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := e.client.CoreV1().Pods(e.ns).Get(e.ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		p.Status.Phase = phase
		_, err = e.client.CoreV1().Pods(e.ns).UpdateStatus(e.ctx, p, metav1.UpdateOptions{})
		return err
	})
	e.noError(err, "pod status "+name)
}

// deletePod deletes the pod at once (grace period 0), as a kubelet finishing
// it or `kubectl delete --force` would.
func (e *env) deletePod(name string) {
	e.t.Helper()
	err := e.client.CoreV1().Pods(e.ns).Delete(e.ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	e.noError(err, "delete pod "+name)
}

// removePods takes every pod of the namespace away, finalizers included.
func (e *env) removePods() {
	pods, err := e.client.CoreV1().Pods(e.ns).List(e.ctx, metav1.ListOptions{})
	if err != nil {
		return
	}
	for _, p := range pods.Items {
		if len(p.Finalizers) > 0 {
			p.Finalizers = nil
			_, _ = e.client.CoreV1().Pods(e.ns).Update(e.ctx, &p, metav1.UpdateOptions{})
		}
		_ = e.client.CoreV1().Pods(e.ns).Delete(e.ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	}
}

// Backend.

// backendHas says whether any node's driver holds the volume.
func (e *env) backendHas(id string) bool {
	e.t.Helper()
	for _, d := range bed.drivers {
		token := ""
		for {
			resp, err := d.ListVolumes(e.ctx, &csi.ListVolumesRequest{StartingToken: token})
			e.noError(err, "ListVolumes")
			for _, entry := range resp.GetEntries() {
				if entry.GetVolume().GetVolumeId() == id {
					return true
				}
			}
			if token = resp.GetNextToken(); token == "" {
				break
			}
		}
	}
	return false
}

func deleteRequest(id string) *csi.DeleteVolumeRequest { return &csi.DeleteVolumeRequest{VolumeId: id} }
