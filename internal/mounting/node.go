package mounting

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// MaxTeardownRounds bounds the teardown of one node sync: unpublish, then
// unstage what that freed, then remove the pod directories that emptied;
// each round decides again from what the disk holds after the last.
const MaxTeardownRounds = 3

// NodeAction is what a node sync writes once its teardown is done.
type NodeAction int

const (
	// Unregistered: there is no Node object (yet): nothing to report and
	// nothing to finish; the Node's creation brings the node back.
	Unregistered NodeAction = iota
	// ReportInUse: node.status.volumesInUse is not Plan.VolumesInUse:
	// write it.
	ReportInUse
	// UpToDate: the node reports what it uses; nothing to write.
	// (Plan.Finish is completed whatever the action: the kubelet's pod
	// deletion does not wait for the node status.)
	UpToDate
)

func (a NodeAction) String() string {
	return [...]string{"Unregistered", "ReportInUse", "UpToDate"}[a]
}

// nodeAction decides the node's write from the plan's volumesInUse and
// what the node reports.
func (w World) nodeAction(inUse []corev1.UniqueVolumeName) NodeAction {
	switch {
	case !w.Registered:
		return Unregistered
	case !slices.Equal(inUse, w.Reported):
		return ReportInUse
	}
	return UpToDate
}

// TearsDown says whether the plan unpublishes, unstages or removes a pod
// directory: a node sync that did so decides again (up to
// MaxTeardownRounds) before it writes.
func (p Plan) TearsDown() bool {
	return len(p.Unpublish)+len(p.Unstage)+len(p.RemovePodDirs) > 0
}

// PodPlan returns the plan of the live pod with the given UID; false when
// the pod is not live on the node (nothing to mount for it).
func (p Plan) PodPlan(pod *corev1.Pod) (PodPlan, bool) {
	for _, pp := range p.Pods {
		if pp.Pod.UID == pod.UID {
			return pp, true
		}
	}
	return PodPlan{}, false
}
