package health

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PodInput is what the node agent knows of one pod's volume at one probe.
type PodInput struct {
	Pod *v1.Pod
	// Volume is the name in pod.spec.volumes.
	Volume string
	// Now is the node service's answer: nil conditions is healthy.
	Now []v1.VolumeHealthCondition
	// Before is what was last reported for this pod's volume by event;
	// nil is healthy.
	Before []v1.VolumeHealthCondition
	// WriteStatus: the CSIVolumeHealth gate is on, so the pod's
	// status.volumeHealth holds the conditions.
	WriteStatus bool
	Time        metav1.Time
}

// PodDecision is what to do for one pod's volume.
type PodDecision struct {
	Event *Event
	// Want is the pod with its new status.volumeHealth, nil when it does
	// not change.
	Want *v1.Pod
}

// DecidePod decides one pod's volume as the kubelet's status manager does
// (SetPodVolumeHealth): the entry named Volume of status.volumeHealth
// holds the conditions, written only when the set of (status, reason)
// differs, with a new lastTransitionTime; an empty set is written as an
// entry with no conditions, as the kubelet does. Beyond the kubelet, an
// event on the pod on each change, whatever the gate.
func DecidePod(in PodInput) PodDecision {
	d := PodDecision{Event: transitionEvent(in.Before, in.Now)}
	if !in.WriteStatus {
		return d
	}
	idx := -1
	var have []v1.VolumeHealthCondition
	for i, h := range in.Pod.Status.VolumeHealth {
		if h.Name == in.Volume {
			idx, have = i, h.HealthConditions
			break
		}
	}
	if SetsEqual(have, in.Now) && (idx >= 0 || len(in.Now) == 0) {
		return d
	}
	want := in.Pod.DeepCopy()
	entry := v1.PodVolumeHealth{Name: in.Volume, HealthConditions: append([]v1.VolumeHealthCondition(nil), in.Now...), LastTransitionTime: in.Time}
	if idx >= 0 {
		want.Status.VolumeHealth[idx] = entry
	} else {
		want.Status.VolumeHealth = append(want.Status.VolumeHealth, entry)
	}
	d.Want = want
	return d
}
