package nodeagent

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/volplane/volplane/internal/controller/loop"
	"github.com/volplane/volplane/internal/mounting"
)

// attachLimits is the agent's memory for the kubelet's attach limit
// (mounting.DecideRefresh, PodPlan.AttachLimitRejection): per node and
// driver ("node/driver", the allocatable queue's key) the refresh state
// and the last ResourceExhausted failure acted on; per node, since when
// each of its pods waits for an attachment. It is memory only, as the
// kubelet's: a restart starts the periods and the waits again.
type attachLimits struct {
	mu       sync.Mutex
	state    map[string]mounting.AllocatableState
	failures map[string]string
	waits    map[string]map[types.UID]time.Time
}

func allocatableKey(node, driver string) string { return node + "/" + driver }

// registerLimits watches the attachments (a ResourceExhausted failure
// refreshes its driver's count at once) and the CSIDrivers (a period set,
// changed or dropped) for the allocatable queue.
func (a *Agent) registerLimits() error {
	a.limits = attachLimits{state: map[string]mounting.AllocatableState{}, failures: map[string]string{},
		waits: map[string]map[types.UID]time.Time{}}
	vas := a.factory.Storage().V1().VolumeAttachments().Informer()
	if _, err := vas.AddEventHandler(funcs(a.onAttachmentFailure)); err != nil {
		return err
	}
	drivers := a.factory.Storage().V1().CSIDrivers().Informer()
	_, err := drivers.AddEventHandler(funcs(func(obj any) {
		if d, ok := loop.As[*storagev1.CSIDriver](obj); ok {
			a.queueAllocatable(d.Name)
		}
	}))
	return err
}

// queueAllocatable queues the driver on every node it serves; "" queues
// every driver.
func (a *Agent) queueAllocatable(driver string) {
	for _, n := range a.nodes {
		for name := range n.endpoints {
			if driver == "" || name == driver {
				a.allocQ.Add(allocatableKey(n.name, name))
			}
		}
	}
}

// onAttachmentFailure queues a refresh of the driver's count on the node
// when the attachment failed with ResourceExhausted, once per failure
// (mounting.ExhaustedFailure): the attacher's next failure, after its
// backoff, is a new one. Only attachments of our nodes, for a driver whose
// node service serves the node, count; users cannot write attachments.
func (a *Agent) onAttachmentFailure(obj any) {
	va, ok := loop.As[*storagev1.VolumeAttachment](obj)
	if !ok {
		return
	}
	n := a.nodes[va.Spec.NodeName]
	failure := mounting.ExhaustedFailure(va)
	if n == nil || failure == "" || n.endpoints[va.Spec.Attacher] == nil {
		return
	}
	key := allocatableKey(n.name, va.Spec.Attacher)
	a.limits.mu.Lock()
	defer a.limits.mu.Unlock()
	if a.limits.failures[key] == failure {
		return
	}
	a.limits.failures[key] = failure
	st := a.limits.state[key]
	st.Exhausted = true
	a.limits.state[key] = st
	a.allocQ.Add(key)
}

// syncAllocatable asks a node's driver NodeGetInfo again when
// mounting.DecideRefresh says so and writes its CSINode entry if that
// changed it; it looks again when the period is due.
func (a *Agent) syncAllocatable(ctx context.Context, key string) (loop.Result, error) {
	node, driver, _ := strings.Cut(key, "/")
	n := a.nodes[node]
	if n == nil || n.endpoints[driver] == nil {
		return loop.Done(), nil
	}
	csiDriver, err := a.drivers.Get(driver)
	if err != nil && !apierrors.IsNotFound(err) {
		return loop.Done(), err
	}
	a.limits.mu.Lock()
	st := a.limits.state[key]
	why, next, after := mounting.DecideRefresh(csiDriver, st, a.cfg.Clock.Now())
	if why.Asks() {
		// Taken: a failure seen from now on asks again.
		st.Exhausted = false
		a.limits.state[key] = st
	} else {
		a.limits.state[key] = next
	}
	a.limits.mu.Unlock()
	if !why.Asks() {
		return loop.After(after), nil
	}
	info, err := n.endpoints[driver].NodeInfo(ctx)
	if err == nil {
		d := mounting.NodeDriver{Name: driver, NodeID: info.NodeID, Topology: info.Topology, MaxVolumes: info.MaxVolumes}
		err = a.writeCSINode(ctx, n, []mounting.NodeDriver{d})
	}
	a.limits.mu.Lock()
	cur := a.limits.state[key]
	if err != nil {
		// Asked again with backoff, for the same cause.
		cur.Exhausted = cur.Exhausted || why == mounting.RefreshAttachExhausted
		a.limits.state[key] = cur
		a.limits.mu.Unlock()
		return loop.Done(), fmt.Errorf("node %s: refresh the allocatable count of driver %s: %w", node, driver, err)
	}
	next.Exhausted = cur.Exhausted
	a.limits.state[key] = next
	a.limits.mu.Unlock()
	if next.Exhausted {
		a.allocQ.Add(key)
	}
	klog.FromContext(ctx).V(2).Info("Refreshed the driver's allocatable count", "node", node, "driver", driver, "why", why, "count", info.MaxVolumes)
	return loop.After(after), nil
}

// admitAttachLimit rejects the pod as the kubelet does when its wait for
// an attachment ended while the node had no room for it
// (PodPlan.AttachLimitRejection): the Warning event and the Failed status
// with reason VolumeAttachmentLimitExceeded. The wait starts when a sync
// first finds the pod waiting for an attachment and lasts
// Config.PodAttachAndMountTimeout; a pod waiting for a failed attachment
// is looked at again when it ends.
func (a *Agent) admitAttachLimit(ctx context.Context, n *nodeState, w mounting.World, pp mounting.PodPlan) (bool, loop.Result, error) {
	now := a.cfg.Clock.Now()
	since, waiting := a.limits.waitOf(w, pp, now)
	if !waiting {
		return false, loop.Done(), nil
	}
	waited := now.Sub(since)
	msg := pp.AttachLimitRejection(w, waited >= a.cfg.PodAttachAndMountTimeout)
	if msg == "" {
		if pp.WaitsForExhausted(w) {
			return false, loop.After(a.cfg.PodAttachAndMountTimeout - waited), nil
		}
		return false, loop.Done(), nil
	}
	pod := pp.Pod
	n.recorder.Event(pod, corev1.EventTypeWarning, mounting.VolumeAttachmentLimitExceeded, msg)
	upd := mounting.RejectedStatus(pod, mounting.VolumeAttachmentLimitExceeded, msg, metav1.NewTime(now))
	_, err := a.cfg.Client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, upd, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		err = nil
	}
	if err != nil {
		return true, loop.Done(), fmt.Errorf("reject pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	a.limits.forget(w.Node, pod.UID)
	klog.FromContext(ctx).Info("Pod rejected: the node has no room for its attachment", "pod", klog.KObj(pod), "node", w.Node)
	return true, loop.Done(), nil
}

// waitOf is since when the pod waits for an attachment, starting the wait
// now if it just began, and whether it waits.
func (l *attachLimits) waitOf(w mounting.World, pp mounting.PodPlan, now time.Time) (time.Time, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	waits := l.waits[w.Node]
	if waits == nil {
		waits = map[types.UID]time.Time{}
		l.waits[w.Node] = waits
	}
	uid := pp.Pod.UID
	if !pp.WaitsForAttach() {
		delete(waits, uid)
		return time.Time{}, false
	}
	since, ok := waits[uid]
	if !ok {
		since = now
		waits[uid] = now
	}
	return since, true
}

// keepPods drops the waits of pods no longer on the node: the node's
// sync, which sees every pod of it, calls it (a pod's deletion queues it).
func (l *attachLimits) keepPods(node string, pods []*corev1.Pod) {
	l.mu.Lock()
	defer l.mu.Unlock()
	waits := l.waits[node]
	if len(waits) == 0 {
		return
	}
	on := make(map[types.UID]bool, len(pods))
	for _, p := range pods {
		on[p.UID] = true
	}
	for uid := range waits {
		if !on[uid] {
			delete(waits, uid)
		}
	}
}

func (l *attachLimits) forget(node string, uid types.UID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.waits[node], uid)
}
