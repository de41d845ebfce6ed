package e2e

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/binding"
)

// binderComponent is the event source of every binder event: users filter
// `kubectl get events` on it, so the tests check it on every event.
const binderComponent = "persistentvolume-controller"

// Annotations the tests read and write (spelled out: users depend on them).
const (
	annBindCompleted    = "pv.kubernetes.io/bind-completed"
	annBoundByCtrl      = "pv.kubernetes.io/bound-by-controller"
	annProvisioner      = "volume.kubernetes.io/storage-provisioner"
	annBetaProvisioner  = "volume.beta.kubernetes.io/storage-provisioner"
	annBetaClass        = "volume.beta.kubernetes.io/storage-class"
	annDefaultClass     = "storageclass.kubernetes.io/is-default-class"
	annSelectedNode     = "volume.kubernetes.io/selected-node"
	testFinalizer       = "e2e.volplane.io/hold"
	unschedulableLabel  = "e2e.volplane.io/nowhere"
	pvEventNamespace    = metav1.NamespaceDefault // events of cluster-scoped objects land here
	recyclerNamespace   = metav1.NamespaceDefault
	neverRunningImage   = "registry.invalid/x"
	quietPeriodForEvent = 5 * time.Second // > 2 resyncs of the test binder
)

// More builder modifiers.

func pvCSI(driver string) pvOpt {
	return func(pv *v1.PersistentVolume) {
		pv.Spec.PersistentVolumeSource = v1.PersistentVolumeSource{
			CSI: &v1.CSIPersistentVolumeSource{Driver: driver, VolumeHandle: pv.Name},
		}
	}
}
func pvFinalizer(f string) pvOpt {
	return func(pv *v1.PersistentVolume) { pv.Finalizers = append(pv.Finalizers, f) }
}
func pvAnnotation(k, v string) pvOpt {
	return func(pv *v1.PersistentVolume) { metav1.SetMetaDataAnnotation(&pv.ObjectMeta, k, v) }
}

// pvBoundTo points the PV at a claim that exists, UID included.
func pvBoundTo(c *v1.PersistentVolumeClaim) pvOpt {
	return func(pv *v1.PersistentVolume) {
		pv.Spec.ClaimRef = &v1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1",
			Namespace: c.Namespace, Name: c.Name, UID: c.UID}
	}
}
func claimBlock() claimOpt {
	return func(c *v1.PersistentVolumeClaim) { c.Spec.VolumeMode = ptr.To(v1.PersistentVolumeBlock) }
}
func claimAnnotation(k, v string) claimOpt {
	return func(c *v1.PersistentVolumeClaim) { metav1.SetMetaDataAnnotation(&c.ObjectMeta, k, v) }
}

// availablePV creates a PV and waits until the binder marked it Available,
// which also proves the binder has seen it: a claim created afterwards is
// matched against it, not against an older view of the cluster.
func (e *env) availablePV(pv *v1.PersistentVolume) *v1.PersistentVolume {
	e.t.Helper()
	e.createPV(pv)
	return e.waitPVPhase(pv.Name, v1.VolumeAvailable)
}

// deletePV deletes a PV and, unless keep is set, drops its finalizers so it
// really goes (no pv-protection controller runs in these tests).
func (e *env) deletePV(name string) {
	e.t.Helper()
	if err := e.client.CoreV1().PersistentVolumes().Delete(e.ctx, name, metav1.DeleteOptions{}); err != nil {
		e.t.Fatalf("delete PV %s: %v", name, err)
	}
	e.eventually("PV "+name+" gone", func() string {
		pv, err := e.client.CoreV1().PersistentVolumes().Get(e.ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return ""
		}
		if err != nil {
			return err.Error()
		}
		pv.Finalizers = nil
		_, err = e.client.CoreV1().PersistentVolumes().Update(e.ctx, pv, metav1.UpdateOptions{})
		return fmt.Sprintf("still there (update: %v)", err)
	})
}

// createClass creates a StorageClass and deletes it when the test ends, so a
// default class never outlives the test that made it.
func (e *env) createClass(name, provisioner string, mode storagev1.VolumeBindingMode, isDefault bool) *storagev1.StorageClass {
	e.t.Helper()
	sc := &storagev1.StorageClass{
		ObjectMeta:        metav1.ObjectMeta{Name: name},
		Provisioner:       provisioner,
		VolumeBindingMode: &mode,
	}
	if isDefault {
		sc.Annotations = map[string]string{annDefaultClass: "true"}
	}
	out, err := e.client.StorageV1().StorageClasses().Create(e.ctx, sc, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("create class %s: %v", name, err)
	}
	e.t.Cleanup(func() {
		_ = e.client.StorageV1().StorageClasses().Delete(e.ctx, name, metav1.DeleteOptions{})
	})
	return out
}

// requireNoDefaultClass fails fast when another test left a default class
// behind: the test's expectations would be wrong, not the binder.
func (e *env) requireNoDefaultClass() {
	e.t.Helper()
	list, err := e.client.StorageV1().StorageClasses().List(e.ctx, metav1.ListOptions{})
	if err != nil {
		e.t.Fatalf("list classes: %v", err)
	}
	for _, sc := range list.Items {
		if sc.Annotations[annDefaultClass] == "true" || sc.Annotations["storageclass.beta.kubernetes.io/is-default-class"] == "true" {
			e.t.Fatalf("a default class %s exists; this test needs none", sc.Name)
		}
	}
}

type podOpt func(*v1.Pod)

// podUnschedulable gives the pod a node selector no node has, so it stays
// unscheduled for as long as the test needs.
func podUnschedulable() podOpt {
	return func(p *v1.Pod) { p.Spec.NodeSelector = map[string]string{unschedulableLabel: "true"} }
}

// createPod creates a pod that uses the claim. No kubelet runs: the pod is
// at most scheduled, never started. It is force-deleted when the test ends.
func (e *env) createPod(name, claim string, opts ...podOpt) *v1.Pod {
	e.t.Helper()
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: e.ns},
		Spec: v1.PodSpec{
			Containers: []v1.Container{{Name: "c", Image: neverRunningImage,
				VolumeMounts: []v1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
			Volumes: []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{
				PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}},
		},
	}
	for _, o := range opts {
		o(pod)
	}
	out, err := e.client.CoreV1().Pods(e.ns).Create(e.ctx, pod, metav1.CreateOptions{})
	if err != nil {
		e.t.Fatalf("create pod %s: %v", name, err)
	}
	e.t.Cleanup(func() { e.forceDeletePod(e.ns, name) })
	return out
}

// forceDeletePod deletes a pod at once: without a kubelet a scheduled pod
// would otherwise stay Terminating forever.
func (e *env) forceDeletePod(ns, name string) {
	err := e.client.CoreV1().Pods(ns).Delete(e.ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
	if err != nil && !apierrors.IsNotFound(err) {
		e.t.Errorf("delete pod %s/%s: %v", ns, name, err)
	}
}

// finishPod plays the kubelet: it writes a terminal phase into the pod status.
func (e *env) finishPod(ns, name string, phase v1.PodPhase, message string) {
	e.t.Helper()
	e.eventually("pod "+name+" "+string(phase), func() string {
		pod, err := e.client.CoreV1().Pods(ns).Get(e.ctx, name, metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		pod.Status.Phase = phase
		pod.Status.Message = message
		if _, err := e.client.CoreV1().Pods(ns).UpdateStatus(e.ctx, pod, metav1.UpdateOptions{}); err != nil {
			return err.Error()
		}
		return ""
	})
}

func (e *env) waitPod(ns, name string) *v1.Pod {
	e.t.Helper()
	var pod *v1.Pod
	e.eventually("pod "+ns+"/"+name+" exists", func() string {
		var err error
		pod, err = e.client.CoreV1().Pods(ns).Get(e.ctx, name, metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		return ""
	})
	return pod
}

// Events.

// binderEvents lists the binder's events with a reason on an object.
func (e *env) binderEvents(kind, ns, name, reason string) []v1.Event {
	var out []v1.Event
	for _, ev := range e.events(kind, ns, name) {
		if ev.Reason == reason && ev.Source.Component == binderComponent {
			out = append(out, ev)
		}
	}
	return out
}

// waitBinderEvent waits for the binder to record exactly this event (type,
// reason and the whole message) on the object.
func (e *env) waitBinderEvent(kind, ns, name, eventType, reason, message string) {
	e.t.Helper()
	e.eventually(fmt.Sprintf("%s event %s on %s %s", eventType, reason, kind, name), func() string {
		evs := e.events(kind, ns, name)
		for _, ev := range evs {
			if ev.Type == eventType && ev.Reason == reason && ev.Message == message && ev.Source.Component == binderComponent {
				return ""
			}
		}
		return fmt.Sprintf("want %s %s: %q [%s]; events: %v", eventType, reason, message, binderComponent, summarize(evs))
	})
}

func (e *env) waitClaimEvent(claim, eventType, reason, message string) {
	e.t.Helper()
	e.waitBinderEvent("PersistentVolumeClaim", e.ns, claim, eventType, reason, message)
}

func (e *env) waitPVEvent(pv, eventType, reason, message string) {
	e.t.Helper()
	e.waitBinderEvent("PersistentVolume", pvEventNamespace, pv, eventType, reason, message)
}

// noEvents fails the test if the binder recorded any event with one of the
// reasons on the object.
func (e *env) noEvents(kind, ns, name string, reasons ...string) {
	e.t.Helper()
	for _, r := range reasons {
		if evs := e.binderEvents(kind, ns, name, r); len(evs) > 0 {
			e.t.Errorf("unexpected %s events on %s %s: %v", r, kind, name, summarize(evs))
		}
	}
}

// Assertions on objects.

func claimStaysPending(e *env, claim string) func() string {
	return func() string {
		c := e.getClaim(claim)
		if c.Status.Phase != v1.ClaimPending || c.Spec.VolumeName != "" {
			return fmt.Sprintf("claim phase %s volumeName %q, want Pending and unbound", c.Status.Phase, c.Spec.VolumeName)
		}
		return ""
	}
}

func pvStaysUnclaimed(e *env, pv string) func() string {
	return func() string {
		v := e.getPV(pv)
		if v.Spec.ClaimRef != nil {
			return fmt.Sprintf("PV %s claimed by %s/%s", pv, v.Spec.ClaimRef.Namespace, v.Spec.ClaimRef.Name)
		}
		return ""
	}
}

func hasAnnotation(m metav1.ObjectMeta, key string) bool {
	_, ok := m.Annotations[key]
	return ok
}

func claimRefUID(pv *v1.PersistentVolume) types.UID {
	if pv.Spec.ClaimRef == nil {
		return ""
	}
	return pv.Spec.ClaimRef.UID
}

// waitClaimSeen waits until the binder has synced a claim of the test's
// class that no PV fits: no StorageClass of that name exists, so it records
// the reference's ProvisioningFailed warning. The API server creates claims
// Pending already, so waiting for the phase proves nothing.
func (e *env) waitClaimSeen(claim string) {
	e.t.Helper()
	e.waitClaimEvent(claim, v1.EventTypeWarning, binding.EventProvisioningFailed, e.classNotFound())
}

// waitClaimsSeen is waitClaimSeen for n claims of the namespace at once.
func (e *env) waitClaimsSeen(n int) {
	e.t.Helper()
	e.eventually(fmt.Sprintf("the binder saw %d claims", n), func() string {
		list, err := e.client.CoreV1().Events(e.ns).List(e.ctx, metav1.ListOptions{})
		if err != nil {
			return err.Error()
		}
		seen := map[string]bool{}
		for _, ev := range list.Items {
			if ev.Reason == binding.EventProvisioningFailed && ev.Message == e.classNotFound() && ev.Source.Component == binderComponent {
				seen[ev.InvolvedObject.Name] = true
			}
		}
		if len(seen) < n {
			return fmt.Sprintf("%d of %d", len(seen), n)
		}
		return ""
	})
}

func (e *env) classNotFound() string {
	return fmt.Sprintf("storageclass.storage.k8s.io %q not found", e.class)
}
