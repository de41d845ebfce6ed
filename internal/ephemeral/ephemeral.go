package ephemeral

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/storage/ephemeral"
	"k8s.io/utils/ptr"
)

// Action is what one ephemeral volume needs.
type Action int

const (
	// None: the volume's claim is the pod's already.
	None Action = iota
	// Create: the claim is missing; create it from the template.
	Create
	// Conflict: a claim of the volume's name exists that the pod does not
	// control; warn and wait, never touch it.
	Conflict
)

func (a Action) String() string { return [...]string{"None", "Create", "Conflict"}[a] }

// Reason says why. The set is closed; events, logs and tests use the same
// values.
type Reason string

const (
	// ReasonOwned: the claim exists and the pod controls it.
	ReasonOwned Reason = "Owned"
	// ReasonMissing: no claim of the volume's name exists.
	ReasonMissing Reason = "Missing"
	// ReasonNotOwned: a claim of the volume's name exists that the pod
	// does not control (made by a user, or for an earlier pod of the same
	// name).
	ReasonNotOwned Reason = "NotOwned"
)

// EventReason is the reason of the warning a Conflict (or a failed create)
// puts on the pod: the reference's events.FailedBinding.
const EventReason = "FailedBinding"

// Decision is what one of the pod's ephemeral volumes needs, and why.
type Decision struct {
	// Volume is the pod's volume; Claim the name of its claim.
	Volume, Claim string
	Action        Action
	Reason        Reason
}

// Message is the text of the pod's warning for a Conflict, as the
// reference words it: "ephemeral volume <volume>: PVC <ns>/<claim> was
// not created for pod <ns>/<pod> (pod is not owner)".
func (d Decision) Message(pod *v1.Pod) string {
	return fmt.Sprintf("ephemeral volume %s: PVC %s/%s was not created for pod %s/%s (pod is not owner)",
		d.Volume, pod.Namespace, d.Claim, pod.Namespace, pod.Name)
}

// HasEphemeral says whether the pod is worth a sync: it is not being
// deleted and has a generic ephemeral volume (the reference's enqueuePod).
func HasEphemeral(pod *v1.Pod) bool {
	if pod.DeletionTimestamp != nil {
		return false
	}
	for i := range pod.Spec.Volumes {
		if pod.Spec.Volumes[i].Ephemeral != nil {
			return true
		}
	}
	return false
}

// Decide decides the pod's ephemeral volumes in the pod's order, given the
// claims of the pod's namespace by name (nil: no such claim). It stops
// after the first Conflict, as the reference stops at its first error; a
// pod being deleted gets no decision.
func Decide(pod *v1.Pod, claim func(name string) *v1.PersistentVolumeClaim) []Decision {
	if pod.DeletionTimestamp != nil {
		return nil
	}
	var out []Decision
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		if vol.Ephemeral == nil {
			continue
		}
		d := Decision{Volume: vol.Name, Claim: ephemeral.VolumeClaimName(pod, vol)}
		switch c := claim(d.Claim); {
		case c == nil:
			d.Action, d.Reason = Create, ReasonMissing
		case ephemeral.VolumeIsForPod(pod, c) != nil:
			d.Action, d.Reason = Conflict, ReasonNotOwned
		default:
			d.Action, d.Reason = None, ReasonOwned
		}
		out = append(out, d)
		if d.Action == Conflict {
			break
		}
	}
	return out
}

// NewClaim is the claim the loop creates for the pod's volume: named
// "<pod>-<volume>" in the pod's namespace, controlled by the pod (which
// blocks its owner's deletion, so the garbage collector deletes it with
// the pod), with the template's labels, annotations and spec. Nothing else
// of the template's metadata is taken (the API server refuses a template
// that sets more; this never trusts that it did).
func NewClaim(pod *v1.Pod, vol *v1.Volume) *v1.PersistentVolumeClaim {
	tmpl := vol.Ephemeral.VolumeClaimTemplate
	c := &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Name:      ephemeral.VolumeClaimName(pod, vol),
			Namespace: pod.Namespace,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
		},
	}
	if tmpl != nil {
		c.Labels, c.Annotations = copyMap(tmpl.Labels), copyMap(tmpl.Annotations)
		c.Spec = *tmpl.Spec.DeepCopy()
	}
	return c
}

func copyMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// Volume is the pod's volume of the name, nil if none.
func Volume(pod *v1.Pod, name string) *v1.Volume {
	for i := range pod.Spec.Volumes {
		if pod.Spec.Volumes[i].Name == name {
			return &pod.Spec.Volumes[i]
		}
	}
	return nil
}
