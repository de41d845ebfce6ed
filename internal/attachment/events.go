package attachment

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// EventComponent is the source component of the events, as the reference
// names it.
const EventComponent = "attachdetach-controller"

// The event reasons on pods.
const (
	SuccessfulAttachVolume = "SuccessfulAttachVolume"
	FailedAttachVolume     = "FailedAttachVolume"
)

// Event is one event to record on a pod. Key identifies the occurrence: a
// caller records an event once per key for as long as the key keeps being
// decided, so a condition that lasts is reported once and one that returns
// is reported again.
type Event struct {
	Pod     *v1.Pod
	Type    string
	Reason  string
	Message string
	Key     string
	// Volume is the volume the event is about (Facts.Scope).
	Volume v1.UniqueVolumeName
}

// volumeMsg is the reference's generateVolumeMsg: prefix, the volume's
// name quoted, then the suffix, with single spaces (so an empty suffix
// leaves a trailing space).
func volumeMsg(prefix, pv, suffix string) string {
	return fmt.Sprintf("%v for volume %q %v", prefix, pv, suffix)
}

// attachedEvents tell the pods the volume is attached; key is the
// attachment's name, or the unique volume name of an in-tree volume,
// which has none.
func attachedEvents(d *Desired, key string) []Event {
	var out []Event
	for _, pod := range d.Pods {
		out = append(out, Event{Pod: pod, Type: v1.EventTypeNormal, Reason: SuccessfulAttachVolume,
			Message: volumeMsg("AttachVolume.Attach succeeded", d.Name, ""),
			Key:     "attached/" + key + "/" + string(pod.UID), Volume: d.Unique})
	}
	return out
}

// attachFailedEvents reports the attacher's error; its time is part of the
// key, so each retry of the attacher is reported, as the reference reports
// each of its own retries.
func attachFailedEvents(d *Desired, vaName, message, at string) []Event {
	var out []Event
	for _, pod := range d.Pods {
		out = append(out, Event{Pod: pod, Type: v1.EventTypeWarning, Reason: FailedAttachVolume,
			Message: volumeMsg("AttachVolume.Attach failed", d.Name, ": "+message),
			Key:     "attach-failed/" + vaName + "/" + at + "/" + message + "/" + string(pod.UID), Volume: d.Unique})
	}
	return out
}

// multiAttachEvents tells each pod waiting for the volume who holds it:
// the pods of its own namespace by name, the others by count only (a user
// of one namespace must not learn pod names of another), or, if no pod on
// the other nodes uses it any more, that it is still attached there.
func multiAttachEvents(d *Desired, holders []*v1.Pod) []Event {
	var out []Event
	for _, pod := range d.Pods {
		msg := "Volume is already exclusively attached to one node, waiting on detach before it can be attached to another node"
		if len(holders) > 0 {
			msg = usedByMsg(pod.Namespace, holders)
		}
		out = append(out, Event{Pod: pod, Type: v1.EventTypeWarning, Reason: FailedAttachVolume,
			Message: volumeMsg("Waiting for detach", d.Name, msg),
			Key:     "multi-attach/" + d.Name + "/" + string(pod.UID), Volume: d.Unique})
	}
	return out
}

func usedByMsg(namespace string, holders []*v1.Pod) string {
	var local []string
	others := 0
	for _, p := range holders {
		if p.Namespace == namespace {
			local = append(local, p.Name)
		} else {
			others++
		}
	}
	if len(local) == 0 {
		return fmt.Sprintf("Volume is already used by %d pod(s) in different namespaces", others)
	}
	msg := "Volume is already used by pod(s) " + strings.Join(local, ", ")
	if others > 0 {
		msg += fmt.Sprintf(" and %d pod(s) in different namespaces", others)
	}
	return msg
}
