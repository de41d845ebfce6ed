package nodeagent

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/volplane/volplane/internal/controller/loop"
	"github.com/volplane/volplane/internal/mounting"
)

// syncPod mounts a live pod's volumes and marks it running once they are
// all published. A driver error is returned, so the pod is retried with
// backoff; waits end with the event that lets them go on (a claim bound,
// an attachment, the node's status), so a sync is otherwise Done.
func (a *Agent) syncPod(ctx context.Context, key string) (loop.Result, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return loop.Done(), nil
	}
	pod, err := a.pods.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return loop.Done(), nil
	}
	if err != nil {
		return loop.Done(), fmt.Errorf("pod %s: %w", key, err)
	}
	n := a.nodes[pod.Spec.NodeName]
	if n == nil || !mounting.WantsMount(pod) || a.down(n.name) {
		return loop.Done(), nil
	}
	n.mu.RLock()
	defer n.mu.RUnlock()
	w, err := a.podWorld(ctx, n, pod)
	if err != nil {
		return loop.Done(), err
	}
	pp, live, report := mounting.DecidePod(w, pod)
	if report {
		a.nodeQ.Add(n.name)
	}
	if live {
		rejected, res, err := a.admitAttachLimit(ctx, n, w, pp)
		if rejected {
			return res, err
		}
		return res, a.mountPod(ctx, n, w, pp)
	}
	return loop.Done(), nil
}

// mountPod carries out a pod's plan: the pod-level FailedMount event, each
// step's operations (mounting.Step.Ops), and the Running status once no
// volume waits and every operation succeeded (PodPlan.MarkRunning).
func (a *Agent) mountPod(ctx context.Context, n *nodeState, w mounting.World, pp mounting.PodPlan) error {
	pod := pp.Pod
	if msg := pp.FailureMessage(); msg != "" {
		n.recorder.Event(pod, corev1.EventTypeWarning, mounting.FailedMount, msg)
	}
	var errs []error
	for _, s := range pp.Steps {
		if err := a.step(ctx, n, w, pod, s); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if !pp.MarkRunning() {
		return nil
	}
	return a.markRunning(ctx, pod)
}

// step carries out one volume's operations in order; the first that fails
// ends the step, with the kubelet's event.
func (a *Agent) step(ctx context.Context, n *nodeState, w mounting.World, pod *corev1.Pod, s mounting.Step) error {
	logger := klog.FromContext(ctx)
	if s.Action == mounting.Wait {
		msg := s.WaitMessage()
		if msg != "" {
			n.recorder.Event(pod, corev1.EventTypeWarning, mounting.FailedMount, msg)
		}
		logger.V(4).Info("Volume waits", "pod", klog.KObj(pod), "node", n.name, "volume", s.Name, "reason", s.Reason)
		if s.Reason.Retries() {
			return errors.New(msg)
		}
		return nil
	}
	for _, op := range s.Ops() {
		var err error
		switch op {
		case mounting.OpStage:
			err = a.stage(ctx, n, w, pod, s.Volume)
		case mounting.OpPublish:
			err = a.publish(ctx, n, w, pod, s.Volume)
		case mounting.OpExpand:
			return a.expand(ctx, n, w, pod, s.Volume, s.Expand)
		}
		if err != nil {
			n.recorder.Event(pod, corev1.EventTypeWarning, mounting.FailedMount, mounting.OpFailedMessage(op, s.Volume, err))
			return err
		}
	}
	if s.NotExpanded != "" {
		logger.V(4).Info("Volume not expanded on the node", "pod", klog.KObj(pod), "pv", s.Volume.PV.Name, "reason", s.NotExpanded)
	}
	return nil
}
