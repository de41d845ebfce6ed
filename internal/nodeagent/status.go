package nodeagent

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
	"k8s.io/kubectl/pkg/util/podutils"
)

// podIP is the address of every simulated pod: nothing listens on it.
const podIP = "127.0.0.1"

// markRunning writes the status a kubelet writes once the pod's containers
// started: Running, every condition True, every container running, ready
// and started.
func (a *Agent) markRunning(ctx context.Context, pod *corev1.Pod) error {
	now := metav1.Now()
	upd := pod.DeepCopy()
	upd.Status.Phase = corev1.PodRunning
	upd.Status.PodIP, upd.Status.PodIPs = podIP, []corev1.PodIP{{IP: podIP}}
	upd.Status.HostIP, upd.Status.HostIPs = podIP, []corev1.HostIP{{IP: podIP}}
	if upd.Status.StartTime == nil {
		upd.Status.StartTime = &now
	}
	upd.Status.Conditions = nil
	for _, t := range []corev1.PodConditionType{corev1.PodScheduled, corev1.PodInitialized,
		corev1.PodReadyToStartContainers, corev1.ContainersReady, corev1.PodReady} {
		upd.Status.Conditions = append(upd.Status.Conditions, corev1.PodCondition{Type: t, Status: corev1.ConditionTrue, LastTransitionTime: now})
	}
	upd.Status.ContainerStatuses = nil
	for _, c := range pod.Spec.Containers {
		upd.Status.ContainerStatuses = append(upd.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: c.Image, Ready: true, Started: new(bool),
			ContainerID: "volplane://" + string(pod.UID) + "/" + c.Name,
			State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}})
		*upd.Status.ContainerStatuses[len(upd.Status.ContainerStatuses)-1].Started = true
	}
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

// runningAndReady says whether the pod is as markRunning leaves it.
func runningAndReady(pod *corev1.Pod) bool {
	return pod.Status.Phase == corev1.PodRunning && podutils.IsPodReady(pod)
}
