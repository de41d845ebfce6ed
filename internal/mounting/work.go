package mounting

import (
	corev1 "k8s.io/api/core/v1"
)

// Work is where an event about a pod of the node sends it.
type Work int

const (
	// NoWork: the pod runs, is ready, and no claim of it waits for a node
	// expansion: nothing to do until it changes.
	NoWork Work = iota
	// MountPod: the pod is live and not running yet, or a claim of it
	// waits for a node expansion (an online one for a running pod): sync
	// the pod.
	MountPod
	// TearDown: the pod is being deleted or has terminated: sync its node,
	// which unpublishes, unstages and completes the deletion.
	TearDown
)

func (w Work) String() string { return [...]string{"NoWork", "MountPod", "TearDown"}[w] }

// PodWork decides where an event about a pod bound to the node goes.
// claims are the pod's claims the agent knows (missing ones left out).
func PodWork(pod *corev1.Pod, claims []*corev1.PersistentVolumeClaim) Work {
	switch {
	case !isLive(pod):
		return TearDown
	case !RunningAndReady(pod), awaitsNodeExpansion(claims):
		return MountPod
	}
	return NoWork
}

// awaitsNodeExpansion says whether one of the claims waits for a node to
// expand its volume: NodeResizePending, or NodeResizeInProgress left by a
// node that stopped. A running pod is then synced for an online expansion;
// a restarted agent's first sight of its pods takes the same path.
func awaitsNodeExpansion(claims []*corev1.PersistentVolumeClaim) bool {
	for _, claim := range claims {
		switch claim.Status.AllocatedResourceStatuses[corev1.ResourceStorage] {
		case corev1.PersistentVolumeClaimNodeResizePending, corev1.PersistentVolumeClaimNodeResizeInProgress:
			return true
		}
	}
	return false
}

// WantsMount says whether a pod sync has anything to mount for the pod:
// it is not being deleted. (A terminated pod has no PodPlan either; its
// events go to the node.)
func WantsMount(pod *corev1.Pod) bool { return pod.DeletionTimestamp == nil }

// CapacityChanged says whether a claim update changed its status capacity:
// then every live pod using it is synced, not only those waiting, so that a
// ReadWriteMany volume another node finished expanding grows on this node
// too, with no resize status left on the claim to say so.
func CapacityChanged(old, cur *corev1.PersistentVolumeClaim) bool {
	return !old.Status.Capacity.Storage().Equal(*cur.Status.Capacity.Storage())
}

// VolumeCapacityChanged says whether a PV update changed its capacity: then
// every live pod using its claim is synced too. The agent sees the PV and
// the claim on two watches, in either order; the node's decision needs
// both sizes, so whichever change is seen last must wake the running pods
// (a claim another node finished, seen before its PV's new capacity, left
// a ReadWriteMany volume unexpanded on this node). This is the agent's
// equivalent of the kubelet's periodic check of mounted volumes' sizes.
func VolumeCapacityChanged(old, cur *corev1.PersistentVolume) bool {
	return !old.Spec.Capacity.Storage().Equal(*cur.Spec.Capacity.Storage())
}

// RunningAndReady says whether the pod is as RunningStatus leaves it:
// Running with its Ready condition True.
func RunningAndReady(pod *corev1.Pod) bool {
	if pod.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Waits says whether a volume of the pod waits: until none does, the pod
// is not marked running. Stage and Publish steps do not wait; the pod runs
// once they succeed.
func (p PodPlan) Waits() bool {
	for _, s := range p.Steps {
		if s.Action == Wait {
			return true
		}
	}
	return false
}

// MarkRunning says whether the pod's status is to be written Running once
// its steps succeeded: no volume waits and the pod is not so already.
func (p PodPlan) MarkRunning() bool { return !p.Waits() && !RunningAndReady(p.Pod) }
