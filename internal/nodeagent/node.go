package nodeagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/volplane/volplane/internal/controller/loop"
	"github.com/volplane/volplane/internal/mounting"
)

// syncNode tears down what no live pod needs, deciding again after each
// round that did something (up to mounting.MaxTeardownRounds). Each round
// first completes the deletion of the pods whose volumes are unpublished
// (Plan.Finish), as the kubelet does before it unstages; the last plan's
// volumesInUse is written last (Plan.Node).
func (a *Agent) syncNode(ctx context.Context, name string) (loop.Result, error) {
	n := a.nodes[name]
	if n == nil || a.down(name) {
		return loop.Done(), nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	var plan mounting.Plan
	finished := map[types.UID]bool{}
	for round := 0; ; round++ {
		w, err := a.world(ctx, n)
		if err != nil {
			return loop.Done(), err
		}
		plan = mounting.Decide(w)
		a.limits.keepPods(name, w.Pods)
		if err := a.finish(ctx, plan.Finish, finished); err != nil {
			return loop.Done(), err
		}
		if err := a.teardown(ctx, n, plan); err != nil {
			return loop.Done(), err
		}
		if !plan.TearsDown() || round == mounting.MaxTeardownRounds {
			break
		}
	}
	if plan.Node == mounting.ReportInUse {
		return loop.Done(), a.patchVolumesInUse(ctx, name, plan.VolumesInUse)
	}
	return loop.Done(), nil
}

// teardown unpublishes, then unstages, then removes pod directories, as
// planned; an error of one does not stop the others.
func (a *Agent) teardown(ctx context.Context, n *nodeState, plan mounting.Plan) error {
	logger := klog.FromContext(ctx)
	var errs []error
	for _, p := range plan.Unpublish {
		errs = append(errs, a.unpublish(ctx, n, p))
		logger.V(2).Info("Unpublished volume", "node", n.name, "pv", p.PV, "podUID", p.PodUID)
	}
	for _, s := range plan.Unstage {
		errs = append(errs, a.unstage(ctx, n, s))
		logger.V(2).Info("Unstaged volume", "node", n.name, "pv", s.PV, "driver", s.Driver)
	}
	for _, uid := range plan.RemovePodDirs {
		errs = append(errs, removeEmptyTree(n.layout.PodDir(uid)))
	}
	return errors.Join(errs...)
}

// patchVolumesInUse writes node.status.volumesInUse with a patch of that
// field alone, as the kubelet's status setter does; the cluster's own node
// agent preserves it.
func (a *Agent) patchVolumesInUse(ctx context.Context, node string, names []corev1.UniqueVolumeName) error {
	var value any
	if len(names) > 0 {
		value = names
	}
	patch, _ := json.Marshal(map[string]any{"status": map[string]any{"volumesInUse": value}})
	_, err := a.cfg.Client.CoreV1().Nodes().PatchStatus(ctx, node, patch)
	if err != nil {
		return fmt.Errorf("patch volumesInUse of node %s: %w", node, err)
	}
	klog.FromContext(ctx).V(2).Info("Reported volumes in use", "node", node, "volumes", names)
	return nil
}

// finish completes the deletion of pods whose volumes are torn down, as the
// kubelet does: a delete with grace period 0, only of the pod with that UID;
// done records the UIDs deleted in this sync (the informer may still hold
// them in the next round).
func (a *Agent) finish(ctx context.Context, pods []*corev1.Pod, done map[types.UID]bool) error {
	var errs []error
	for _, pod := range pods {
		uid := pod.UID
		if done[uid] {
			continue
		}
		done[uid] = true
		err := a.cfg.Client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
			GracePeriodSeconds: new(int64), Preconditions: &metav1.Preconditions{UID: &uid}})
		switch {
		case err == nil:
			klog.FromContext(ctx).V(2).Info("Completed pod deletion", "pod", klog.KObj(pod))
		case apierrors.IsNotFound(err), apierrors.IsConflict(err):
			// Gone already, or another pod under the name.
		default:
			errs = append(errs, fmt.Errorf("delete pod %s/%s: %w", pod.Namespace, pod.Name, err))
		}
	}
	return errors.Join(errs...)
}
