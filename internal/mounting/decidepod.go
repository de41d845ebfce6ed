package mounting

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// DecidePod is the part of Decide one pod's sync needs: the pod's plan
// (false when the pod is not live) and whether the node must report one of
// its attachable volumes in use before the volume can be attached. It
// reads only what concerns the pod (its claims and volumes, the records of
// its volumes and its own publications), so a caller that gives it the
// pod's own records decides in a time that does not grow with the pods on
// the node; the node-wide decisions (teardown, the full in-use list,
// finishing deletions) stay in Decide, for the node's sync.
func DecidePod(w World, pod *corev1.Pod) (pp PodPlan, live bool, report bool) {
	if !isLive(pod) {
		return PodPlan{}, false, false
	}
	pp = w.podPlan(pod, index(w))
	if !w.Registered {
		return pp, true, false
	}
	for _, s := range pp.Steps {
		if v := s.Volume; v != nil && v.Attachable && !slices.Contains(w.Reported, v.Unique) {
			report = true
		}
	}
	return pp, true, report
}
