package nodeagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/volplane/volplane/internal/mounting"
)

// maxTeardownRounds bounds the teardown of one sync: unpublish, then
// unstage what that freed, then remove the pod directories that emptied.
const maxTeardownRounds = 3

// syncNode tears down what no live pod needs, writes the node's
// volumesInUse, and completes the deletion of pods whose teardown is done.
func (a *Agent) syncNode(ctx context.Context, name string) error {
	n := a.nodes[name]
	if n == nil {
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	var plan mounting.Plan
	var node *corev1.Node
	for round := 0; ; round++ {
		w, nd, err := a.world(n)
		if err != nil {
			return err
		}
		plan, node = mounting.Decide(w), nd
		acted, err := a.teardown(ctx, n, plan)
		if err != nil {
			return err
		}
		if !acted || round == maxTeardownRounds {
			break
		}
	}
	if node.Name == "" {
		return nil // not registered (yet): nothing to report or finish
	}
	if !slices.Equal(plan.VolumesInUse, node.Status.VolumesInUse) {
		// Finishing waits for the informer's copy of the patched status,
		// whose event queues this node again.
		return a.patchVolumesInUse(ctx, name, plan.VolumesInUse)
	}
	return a.finish(ctx, plan.Finish)
}

// teardown unpublishes, unstages and removes pod directories as planned,
// and says whether it did anything.
func (a *Agent) teardown(ctx context.Context, n *nodeState, plan mounting.Plan) (bool, error) {
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
	acted := len(plan.Unpublish)+len(plan.Unstage)+len(plan.RemovePodDirs) > 0
	return acted, errors.Join(errs...)
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

// finish completes the deletion of pods whose teardown is done, as the
// kubelet does: a delete with grace period 0, only of the pod with that UID.
func (a *Agent) finish(ctx context.Context, pods []*corev1.Pod) error {
	var errs []error
	for _, pod := range pods {
		uid := pod.UID
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
