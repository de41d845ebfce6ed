package protection

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/storage/ephemeral"

	"github.com/volplane/volplane/internal/binding"
)

// Use is how a pod uses a claim.
type Use struct {
	// Volume is the name of the pod's volume that refers to the claim.
	Volume string
	// Ephemeral: a generic ephemeral volume whose claim the pod controls;
	// otherwise a persistentVolumeClaim reference by claimName.
	Ephemeral bool
}

func (u Use) String() string {
	if u.Ephemeral {
		return "ephemeral volume " + u.Volume
	}
	return "volume " + u.Volume + " by claimName"
}

// PodUses says whether the pod keeps the claim from being deleted, and how
// (the reference's podUsesPVCForDeletion). Only a scheduled pod counts: the
// kubelet sees pods once they are scheduled and refuses to start one whose
// claim is being deleted. A claimName reference counts whatever the pod's
// phase: a Succeeded or Failed pod that still exists keeps the claim. A
// generic ephemeral volume counts only if the claim is the one made for
// this pod (controlled by it) and the pod is not shut down.
func PodUses(pod *v1.Pod, claim *v1.PersistentVolumeClaim) (Use, bool) {
	if pod.Spec.NodeName == "" || pod.Namespace != claim.Namespace {
		return Use{}, false
	}
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		if vol.PersistentVolumeClaim != nil && vol.PersistentVolumeClaim.ClaimName == claim.Name {
			return Use{Volume: vol.Name}, true
		}
		if vol.Ephemeral != nil && !podIsShutDown(pod) && ephemeral.VolumeClaimName(pod, vol) == claim.Name &&
			ephemeral.VolumeIsForPod(pod, claim) == nil {
			return Use{Volume: vol.Name, Ephemeral: true}, true
		}
	}
	return Use{}, false
}

// podIsShutDown: the kubelet is done with the pod (it asked for deletion
// with grace period 0) or the pod was force-deleted; only a finalizer may
// still hold it. Its ephemeral claim is free then, which also breaks a cycle
// of a pod finalizer waiting for its claim to go.
func podIsShutDown(pod *v1.Pod) bool {
	return pod.DeletionTimestamp != nil && pod.DeletionGracePeriodSeconds != nil && *pod.DeletionGracePeriodSeconds == 0
}

// ClaimKeys are the "namespace/name" keys of every claim the pod refers
// to, ephemeral ones included: the pod index of the controller.
func ClaimKeys(pod *v1.Pod) []string {
	var keys []string
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		switch {
		case vol.PersistentVolumeClaim != nil:
			keys = append(keys, pod.Namespace+"/"+vol.PersistentVolumeClaim.ClaimName)
		case vol.Ephemeral != nil:
			keys = append(keys, pod.Namespace+"/"+ephemeral.VolumeClaimName(pod, vol))
		}
	}
	return keys
}

// PodEvent is what an informer said of a pod.
type PodEvent int

const (
	// PodChanged: the pod was added or updated.
	PodChanged PodEvent = iota
	// PodDeleted: the pod is gone.
	PodDeleted
)

// PodEventMayRelease says whether an event about this pod can free a claim
// being deleted, so its claims are worth a sync (the reference's
// enqueuePVCs filter): the pod was deleted, has terminated, is being
// deleted with every container stopped, or is not scheduled. A live,
// scheduled pod only ever keeps claims.
func PodEventMayRelease(pod *v1.Pod, e PodEvent) bool {
	return e == PodDeleted || pod.Spec.NodeName == "" || binding.PodTerminated(pod)
}

// ClaimFacts is what a claim decision rests on.
type ClaimFacts struct {
	Claim *v1.PersistentVolumeClaim
	// Cached are the pods the informer cache indexes under the claim.
	Cached []*v1.Pod
	// Live are the pods of the claim's namespace from a live list; only
	// meaningful when Listed.
	Live   []*v1.Pod
	Listed bool
}

// DecideClaim decides a pvc-protection sync.
func DecideClaim(f ClaimFacts) Decision {
	c := f.Claim
	if d, done := finalizerStep(c.DeletionTimestamp != nil, c.Finalizers, ClaimFinalizer); done {
		return d
	}
	return cachedThenLive(func() (Decision, bool) { return usedBy(f.Cached, c) },
		func() (Decision, bool) { return usedBy(f.Live, c) }, f.Listed, ListPods)
}

func usedBy(pods []*v1.Pod, claim *v1.PersistentVolumeClaim) (Decision, bool) {
	for _, pod := range pods {
		if use, ok := PodUses(pod, claim); ok {
			return Decision{Action: Keep, Reason: ReasonUsedByPod, Pod: pod.Namespace + "/" + pod.Name, Use: use}, true
		}
	}
	return Decision{}, false
}
