package nodeagent

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/volplane/volplane/internal/mounting"
)

// markRunning writes the status a kubelet writes once the pod's containers
// started (mounting.RunningStatus).
func (a *Agent) markRunning(ctx context.Context, pod *corev1.Pod) error {
	upd := mounting.RunningStatus(pod, metav1.NewTime(a.cfg.Clock.Now()))
	_, err := a.cfg.Client.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, upd, metav1.UpdateOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("mark pod %s/%s running: %w", pod.Namespace, pod.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Pod running", "pod", klog.KObj(pod), "node", pod.Spec.NodeName)
	return nil
}
