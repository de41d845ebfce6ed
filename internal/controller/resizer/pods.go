package resizer

import (
	v1 "k8s.io/api/core/v1"

	"github.com/volplane/volplane/internal/controller/loop"
)

// byClaim indexes the pods that still run (neither Succeeded nor Failed)
// by the claims they use, "namespace/name": the reference's in-use store,
// asked only for a driver that refused an expansion as in use.
const byClaim = "volplane-resizer-claim"

func claimsUsed(obj any) ([]string, error) {
	pod, ok := obj.(*v1.Pod)
	if !ok || pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed {
		return nil, nil
	}
	var out []string
	for _, vol := range pod.Spec.Volumes {
		if vol.PersistentVolumeClaim != nil {
			out = append(out, pod.Namespace+"/"+vol.PersistentVolumeClaim.ClaimName)
		}
	}
	return out, nil
}

// inUse says whether a running pod uses the claim.
func (c *Controller) inUse(key string) bool {
	pods, err := c.podIndex.ByIndex(byClaim, key)
	return err != nil || len(pods) > 0 // unsure: count it as in use, as waiting is safe
}

// onPodGone wakes the claims a pod that ended or went used, when their
// driver refused to expand them in use: they may be expanded now.
func (c *Controller) onPodGone(obj any) {
	pod, ok := loop.As[*v1.Pod](obj)
	if !ok {
		return
	}
	for _, vol := range pod.Spec.Volumes {
		if vol.PersistentVolumeClaim == nil {
			continue
		}
		key := pod.Namespace + "/" + vol.PersistentVolumeClaim.ClaimName
		if c.memory.refusedInUse(key) && !c.inUse(key) {
			c.queue.Add(key)
		}
	}
}

func (c *Controller) onPodUpdate(_, cur any) {
	if pod, ok := cur.(*v1.Pod); ok && (pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed) {
		c.onPodGone(pod)
	}
}
