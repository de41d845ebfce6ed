package mounting

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PodIP is the address of every simulated pod: nothing listens on it.
const PodIP = "127.0.0.1"

// RunningStatus is the pod as the kubelet writes it once its containers
// started, at now: Running, every condition True, every container running,
// ready and started. The pod given is not modified.
func RunningStatus(pod *corev1.Pod, now metav1.Time) *corev1.Pod {
	upd := pod.DeepCopy()
	upd.Status.Phase = corev1.PodRunning
	upd.Status.PodIP, upd.Status.PodIPs = PodIP, []corev1.PodIP{{IP: PodIP}}
	upd.Status.HostIP, upd.Status.HostIPs = PodIP, []corev1.HostIP{{IP: PodIP}}
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
		started := true
		upd.Status.ContainerStatuses = append(upd.Status.ContainerStatuses, corev1.ContainerStatus{
			Name: c.Name, Image: c.Image, ImageID: c.Image, Ready: true, Started: &started,
			ContainerID: "volplane://" + string(pod.UID) + "/" + c.Name,
			State:       corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}})
	}
	return upd
}
