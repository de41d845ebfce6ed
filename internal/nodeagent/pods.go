package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/volplane/volplane/internal/mounting"
)

// syncPod mounts a live pod's volumes and marks it running once they are
// all published.
func (a *Agent) syncPod(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	pod, err := a.pods.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("pod %s: %w", key, err)
	}
	n := a.nodes[pod.Spec.NodeName]
	if n == nil || pod.DeletionTimestamp != nil {
		return nil
	}
	n.mu.RLock()
	defer n.mu.RUnlock()
	w, node, err := a.world(n)
	if err != nil {
		return err
	}
	plan := mounting.Decide(w)
	if !slices.Equal(plan.VolumesInUse, node.Status.VolumesInUse) {
		a.nodeQ.Add(n.name)
	}
	for _, pp := range plan.Pods {
		if pp.Pod.UID == pod.UID {
			return a.mountPod(ctx, n, w, pp)
		}
	}
	return nil
}

// mountPod carries out a pod's steps, records the kubelet's events for what
// fails, and marks the pod running when every volume is published. A
// driver error is returned, so the pod is retried with backoff; waits end
// with the event that lets them go on (a claim bound, an attachment, the
// node's status).
func (a *Agent) mountPod(ctx context.Context, n *nodeState, w mounting.World, pp mounting.PodPlan) error {
	logger := klog.FromContext(ctx)
	pod := pp.Pod
	if msg := pp.FailureMessage(); msg != "" {
		n.recorder.Event(pod, corev1.EventTypeWarning, "FailedMount", msg)
	}
	var errs []error
	ready := true
	for _, s := range pp.Steps {
		if err := a.step(ctx, n, w, pod, s); err != nil {
			errs = append(errs, err)
		}
		ready = ready && s.Action != mounting.Wait
		if s.Action == mounting.Wait {
			logger.V(4).Info("Volume waits", "pod", klog.KObj(pod), "node", n.name, "volume", s.Name, "reason", s.Reason)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if !ready || runningAndReady(pod) {
		return nil
	}
	return a.markRunning(ctx, pod)
}

// step carries out one volume's step.
func (a *Agent) step(ctx context.Context, n *nodeState, w mounting.World, pod *corev1.Pod, s mounting.Step) error {
	switch s.Action {
	case mounting.Wait:
		a.waitEvent(n, pod, s)
		return nil
	case mounting.Stage:
		if err := a.stage(ctx, n, w, s.Volume); err != nil {
			n.recorder.Eventf(pod, corev1.EventTypeWarning, "FailedMount", "MountVolume.MountDevice failed for volume %q : %v", s.Volume.PV.Name, err)
			return err
		}
		fallthrough
	case mounting.Publish:
		if err := a.publish(ctx, n, w, pod, s.Volume); err != nil {
			n.recorder.Eventf(pod, corev1.EventTypeWarning, "FailedMount", "MountVolume.SetUp failed for volume %q : %v", s.Volume.PV.Name, err)
			return err
		}
		fallthrough
	case mounting.ExpandOnNode:
		if s.Expand != nil {
			return a.expand(ctx, n, pod, s.Volume, s.Expand)
		}
	}
	if s.NotExpanded != "" {
		klog.FromContext(ctx).V(4).Info("Volume not expanded on the node", "pod", klog.KObj(pod), "pv", s.Volume.PV.Name, "reason", s.NotExpanded)
	}
	return nil
}

// waitEvent records the per-operation event of a wait the kubelet reports:
// the driver not registered (MountDevice), an attachment that failed
// (WaitForAttach). Plain waits record nothing.
func (a *Agent) waitEvent(n *nodeState, pod *corev1.Pod, s mounting.Step) {
	if s.Err == "" || s.Volume == nil {
		return
	}
	prefix := "MountVolume.WaitForAttach failed"
	if s.Reason == mounting.DriverNotServed {
		prefix = "MountVolume.MountDevice failed"
	}
	n.recorder.Eventf(pod, corev1.EventTypeWarning, "FailedMount", "%s for volume %q : %s", prefix, s.Volume.PV.Name, s.Err)
}
