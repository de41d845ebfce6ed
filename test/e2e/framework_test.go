package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"

	"github.com/volplane/volplane/internal/invariants"
	"github.com/volplane/volplane/internal/stacktest"
	"github.com/volplane/volplane/test/e2e/support"
)

// env is one test's world: a client, a namespace, and a storage class name
// private to the test so its claims never see another test's PVs.
type env struct {
	t      testing.TB
	ctx    context.Context
	client kubernetes.Interface
	ns     string
	class  string
}

func newEnv(t *testing.T) *env {
	t.Helper()
	cp := stacktest.ControlPlane(t)
	e := &env{t: t, ctx: context.Background(), client: cp.Client, ns: stacktest.Namespace(t)}
	e.class = e.ns + "-class"
	t.Cleanup(func() {
		// The invariants hold at the end of every test, before cleanup.
		checkInvariants(t, e.client)
		e.deleteVolumes()
	})
	return e
}

// checkInvariants fails the test if the cluster holds a state the binder
// must never produce (invariants.Bindings): a PV claimed by two Bound
// claims, or a Bound claim whose PV does not point back at it.
func checkInvariants(t *testing.T, client kubernetes.Interface) {
	t.Helper()
	support.Holds(t, 0, func() []string {
		s := support.ReadState(t, client)
		return invariants.Bindings(s.Claims, s.PVs)
	})
}

// Builders: defaults plus modifiers.

type pvOpt func(*v1.PersistentVolume)

func (e *env) pv(name, size string, opts ...pvOpt) *v1.PersistentVolume {
	pv := &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: e.ns + "-" + name, Labels: map[string]string{"e2e-ns": e.ns}},
		Spec: v1.PersistentVolumeSpec{
			AccessModes:                   []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Capacity:                      v1.ResourceList{v1.ResourceStorage: resource.MustParse(size)},
			PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimRetain,
			StorageClassName:              e.class,
			PersistentVolumeSource: v1.PersistentVolumeSource{
				HostPath: &v1.HostPathVolumeSource{Path: "/tmp/volplane-e2e/" + name},
			},
		},
	}
	for _, o := range opts {
		o(pv)
	}
	return pv
}

func pvClass(class string) pvOpt {
	return func(pv *v1.PersistentVolume) { pv.Spec.StorageClassName = class }
}
func pvModes(modes ...v1.PersistentVolumeAccessMode) pvOpt {
	return func(pv *v1.PersistentVolume) { pv.Spec.AccessModes = modes }
}
func pvPolicy(p v1.PersistentVolumeReclaimPolicy) pvOpt {
	return func(pv *v1.PersistentVolume) { pv.Spec.PersistentVolumeReclaimPolicy = p }
}
func pvLabel(k, v string) pvOpt { return func(pv *v1.PersistentVolume) { pv.Labels[k] = v } }
func pvBlock() pvOpt {
	return func(pv *v1.PersistentVolume) { m := v1.PersistentVolumeBlock; pv.Spec.VolumeMode = &m }
}
func pvPreBound(ns, claim string) pvOpt {
	return func(pv *v1.PersistentVolume) {
		pv.Spec.ClaimRef = &v1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: ns, Name: claim}
	}
}

type claimOpt func(*v1.PersistentVolumeClaim)

func (e *env) claim(name, size string, opts ...claimOpt) *v1.PersistentVolumeClaim {
	class := e.class
	c := &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns},
		Spec: v1.PersistentVolumeClaimSpec{
			AccessModes:      []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			StorageClassName: &class,
			Resources: v1.VolumeResourceRequirements{
				Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse(size)},
			},
		},
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

func claimClass(class string) claimOpt {
	return func(c *v1.PersistentVolumeClaim) { c.Spec.StorageClassName = &class }
}
func claimNoClass() claimOpt {
	return func(c *v1.PersistentVolumeClaim) { c.Spec.StorageClassName = nil }
}
func claimModes(modes ...v1.PersistentVolumeAccessMode) claimOpt {
	return func(c *v1.PersistentVolumeClaim) { c.Spec.AccessModes = modes }
}
func claimVolume(name string) claimOpt {
	return func(c *v1.PersistentVolumeClaim) { c.Spec.VolumeName = name }
}
func claimSelector(k, v string) claimOpt {
	return func(c *v1.PersistentVolumeClaim) {
		c.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{k: v}}
	}
}

// Writes.

func (e *env) createPV(pv *v1.PersistentVolume) *v1.PersistentVolume {
	e.t.Helper()
	out, err := e.client.CoreV1().PersistentVolumes().Create(e.ctx, pv, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("create PV %s: %v", pv.Name, err)
	}
	return out
}

func (e *env) createClaim(c *v1.PersistentVolumeClaim) *v1.PersistentVolumeClaim {
	e.t.Helper()
	out, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Create(e.ctx, c, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("create claim %s: %v", c.Name, err)
	}
	return out
}

// deleteClaim deletes a claim and removes its protection finalizer (no
// pvc-protection loop runs in these tests).
func (e *env) deleteClaim(name string) {
	e.t.Helper()
	if err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Delete(e.ctx, name, metav1.DeleteOptions{}); err != nil {
		e.t.Fatalf("delete claim %s: %v", name, err)
	}
	e.dropFinalizers(name)
}

func (e *env) dropFinalizers(name string) {
	e.t.Helper()
	err := wait.PollUntilContextTimeout(e.ctx, 50*time.Millisecond, 10*time.Second, true, func(ctx context.Context) (bool, error) {
		c, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err != nil {
			return false, err
		}
		c.Finalizers = nil
		_, err = e.client.CoreV1().PersistentVolumeClaims(e.ns).Update(ctx, c, metav1.UpdateOptions{})
		return false, client409(err)
	})
	if err != nil {
		e.t.Fatalf("claim %s not deleted: %v", name, err)
	}
}

func client409(err error) error {
	if err == nil || apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func (e *env) deleteVolumes() {
	pvs, err := e.client.CoreV1().PersistentVolumes().List(e.ctx, metav1.ListOptions{LabelSelector: "e2e-ns=" + e.ns})
	if err != nil {
		return
	}
	for _, pv := range pvs.Items {
		pv.Finalizers = nil
		_, _ = e.client.CoreV1().PersistentVolumes().Update(e.ctx, &pv, metav1.UpdateOptions{})
		_ = e.client.CoreV1().PersistentVolumes().Delete(e.ctx, pv.Name, metav1.DeleteOptions{})
	}
}

// Waits.

const waitTimeout = 20 * time.Second

// eventually polls cond until it returns "" (the state is reached) and fails
// the test with the last description of what was wrong otherwise.
func (e *env) eventually(what string, cond func() string) {
	e.t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(e.ctx, 50*time.Millisecond, waitTimeout, true, func(context.Context) (bool, error) {
		last = cond()
		return last == "", nil
	})
	if err != nil {
		e.t.Fatalf("%s: not reached in %s: %s\n%s", what, waitTimeout, last, e.namespaceEvents())
	}
}

// namespaceEvents lists the test namespace's events, oldest first, for a
// failure message: they say what the binder decided while the wait ran.
func (e *env) namespaceEvents() string {
	events, err := e.client.CoreV1().Events(e.ns).List(e.ctx, metav1.ListOptions{})
	if err != nil {
		return "events: " + err.Error()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "events in %s:", e.ns)
	for _, ev := range events.Items {
		fmt.Fprintf(&b, "\n  %s %s/%s %s %s (x%d): %s", ev.LastTimestamp.Format("15:04:05.000"),
			ev.InvolvedObject.Kind, ev.InvolvedObject.Name, ev.Type, ev.Reason, ev.Count, ev.Message)
	}
	return b.String()
}

func (e *env) getClaim(name string) *v1.PersistentVolumeClaim {
	e.t.Helper()
	c, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatalf("get claim %s: %v", name, err)
	}
	return c
}

func (e *env) getPV(name string) *v1.PersistentVolume {
	e.t.Helper()
	pv, err := e.client.CoreV1().PersistentVolumes().Get(e.ctx, name, metav1.GetOptions{})
	if err != nil {
		e.t.Fatalf("get PV %s: %v", name, err)
	}
	return pv
}

// waitBound waits until claim and PV are bound to each other, both ways.
func (e *env) waitBound(claim, pv string) {
	e.t.Helper()
	e.eventually(fmt.Sprintf("claim %s bound to %s", claim, pv), func() string {
		c := e.getClaim(claim)
		v := e.getPV(pv)
		switch {
		case c.Status.Phase != v1.ClaimBound || c.Spec.VolumeName != pv:
			return fmt.Sprintf("claim phase %s volumeName %q", c.Status.Phase, c.Spec.VolumeName)
		case v.Status.Phase != v1.VolumeBound || v.Spec.ClaimRef == nil || v.Spec.ClaimRef.UID != c.UID:
			return fmt.Sprintf("PV phase %s claimRef %v", v.Status.Phase, v.Spec.ClaimRef)
		}
		return ""
	})
}

func (e *env) waitClaimPhase(claim string, phase v1.PersistentVolumeClaimPhase) *v1.PersistentVolumeClaim {
	e.t.Helper()
	var c *v1.PersistentVolumeClaim
	e.eventually("claim "+claim+" "+string(phase), func() string {
		c = e.getClaim(claim)
		if c.Status.Phase != phase {
			return "phase " + string(c.Status.Phase)
		}
		return ""
	})
	return c
}

func (e *env) waitPVPhase(pv string, phase v1.PersistentVolumePhase) *v1.PersistentVolume {
	e.t.Helper()
	var v *v1.PersistentVolume
	e.eventually("PV "+pv+" "+string(phase), func() string {
		v = e.getPV(pv)
		if v.Status.Phase != phase {
			return "phase " + string(v.Status.Phase)
		}
		return ""
	})
	return v
}

func (e *env) events(kind, ns, name string) []v1.Event {
	sel := fields.Set{"involvedObject.kind": kind, "involvedObject.name": name}.String()
	list, err := e.client.CoreV1().Events(ns).List(e.ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		e.t.Fatalf("list events: %v", err)
	}
	return list.Items
}

func summarize(evs []v1.Event) []string {
	out := make([]string, 0, len(evs))
	for _, ev := range evs {
		out = append(out, fmt.Sprintf("%s %s(x%d): %s [%s]", ev.Type, ev.Reason, ev.Count, ev.Message, ev.Source.Component))
	}
	return out
}

// stays asserts cond keeps holding ("" = holds) for d: for states that must
// NOT change, such as a claim that must stay Pending.
func (e *env) stays(what string, d time.Duration, cond func() string) {
	e.t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if msg := cond(); msg != "" {
			e.t.Fatalf("%s: %s", what, msg)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
