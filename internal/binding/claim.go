package binding

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	storagehelpers "k8s.io/component-helpers/storage/volume"
)

// ClaimAction is what a claim sync must write.
type ClaimAction int

const (
	// ClaimNone: write nothing (events may still be due).
	ClaimNone ClaimAction = iota
	// ClaimBind: run the four bind steps with Decision.Volume, in order
	// BindVolumeSpec, BindVolumeStatus, BindClaimSpec, BindClaimStatus.
	ClaimBind
	// ClaimSetDefaultClass: write Decision.Class into spec.storageClassName
	// (SetClaimClass); the update re-triggers the sync.
	ClaimSetDefaultClass
	// ClaimProvision: write both storage-provisioner annotations naming
	// Decision.Provisioner (SetClaimProvisioner), then as ClaimPending.
	ClaimProvision
	// ClaimPending: status phase Pending, access modes and capacity cleared
	// (SetClaimPhase).
	ClaimPending
	// ClaimLost: status phase Lost (SetClaimPhase).
	ClaimLost
)

func (a ClaimAction) String() string {
	switch a {
	case ClaimBind:
		return "Bind"
	case ClaimSetDefaultClass:
		return "SetDefaultClass"
	case ClaimProvision:
		return "Provision"
	case ClaimPending:
		return "Pending"
	case ClaimLost:
		return "Lost"
	}
	return "None"
}

// ClaimInput is everything a claim sync needs to decide.
type ClaimInput struct {
	Claim *v1.PersistentVolumeClaim
	// Volume is the PV named by Claim.Spec.VolumeName, nil when the claim names
	// none or the PV does not exist.
	Volume *v1.PersistentVolume
	// Match is the best free PV for a claim without spec.volumeName (from the
	// index or Match, using DelayBinding(Class)); nil when none fits.
	Match *v1.PersistentVolume
	// Verdicts are passed through to the decision for explain and logs.
	Verdicts []Verdict
	// Tally is Match over every PV, counted (Count), for a claim without
	// spec.volumeName that Match leaves without a volume; nil when it was
	// not counted. It is only reported for classes that bind immediately:
	// for WaitForFirstConsumer the scheduler reports what it considered.
	Tally *Tally
	// Class is the StorageClass the claim names; nil when it names none or
	// the class does not exist.
	Class *storagev1.StorageClass
	// DefaultClass is DefaultClass(all classes); nil when there is none.
	DefaultClass *storagev1.StorageClass
	// Pods are the pods that reference the claim.
	Pods []*v1.Pod
}

// ClaimDecision is what a claim sync must do. It is a value: print it, test it.
type ClaimDecision struct {
	Action      ClaimAction
	Volume      *v1.PersistentVolume // ClaimBind
	Class       string               // ClaimSetDefaultClass
	Provisioner string               // ClaimProvision
	Events      []Event
	Verdicts    []Verdict
	// Note is a short explanation for logs.
	Note string
}

func (d ClaimDecision) String() string {
	var b strings.Builder
	b.WriteString(d.Action.String())
	if d.Volume != nil {
		fmt.Fprintf(&b, " volume=%s", d.Volume.Name)
	}
	if d.Class != "" {
		fmt.Fprintf(&b, " class=%s", d.Class)
	}
	if d.Provisioner != "" {
		fmt.Fprintf(&b, " provisioner=%s", d.Provisioner)
	}
	if d.Note != "" {
		fmt.Fprintf(&b, " (%s)", d.Note)
	}
	for _, e := range d.Events {
		fmt.Fprintf(&b, "; event %s", e)
	}
	return b.String()
}

// DecideClaim decides a claim sync. Claims without the bind-completed
// annotation are still being bound; claims with it were bound once and are
// only kept consistent (or declared Lost).
func DecideClaim(in ClaimInput) ClaimDecision {
	var d ClaimDecision
	switch {
	case metav1.HasAnnotation(in.Claim.ObjectMeta, storagehelpers.AnnBindCompleted):
		d = decideBoundClaim(in)
	case in.Claim.Spec.VolumeName != "":
		d = decideRequestedVolume(in)
	case in.Match != nil:
		d = ClaimDecision{Action: ClaimBind, Volume: in.Match, Note: "best matching volume found"}
	default:
		d = decideNoMatch(in)
	}
	d.Verdicts = in.Verdicts
	return d
}

// decideNoMatch handles an unbound claim for which no PV fits.
func decideNoMatch(in ClaimInput) ClaimDecision {
	claim := in.Claim
	if !ClaimHasClass(claim) && in.DefaultClass != nil {
		return ClaimDecision{Action: ClaimSetDefaultClass, Class: in.DefaultClass.Name,
			Note: "no volume fits and the claim has no class: assigning the default class"}
	}
	className := ClaimClass(claim)
	_, nodeSelected := claim.Annotations[storagehelpers.AnnSelectedNode]
	var d ClaimDecision
	switch {
	case className != "" && DelayBinding(in.Class) && !nodeSelected:
		return ClaimDecision{Action: ClaimPending, Events: []Event{waitForConsumerEvent(in.Pods)},
			Note: "class waits for the first consumer and no node is selected yet"}
	case className != "":
		d = decideProvision(className, in.Class)
	default:
		d = ClaimDecision{Action: ClaimPending, Note: "no volume fits and no class is set",
			Events: []Event{claimEvent(v1.EventTypeNormal, EventFailedBinding, MsgNoVolumesNoClass, true)}}
	}
	if e, ok := noVolumeFitsEvent(in); ok {
		d.Events = append(d.Events, e)
	}
	return d
}

// IsWaiting says whether a claim is still looking for a volume: not being
// deleted, no spec.volumeName, never bound.
func IsWaiting(claim *v1.PersistentVolumeClaim) bool {
	return claim.DeletionTimestamp == nil && claim.Spec.VolumeName == "" &&
		!metav1.HasAnnotation(claim.ObjectMeta, storagehelpers.AnnBindCompleted)
}

// WantsTally says whether DecideClaim reports in.Tally, so that a
// controller counts it (O(class size)) only then: for a claim still looking
// for a volume (no spec.volumeName, never bound) that no volume fits, whose
// class binds immediately (for WaitForFirstConsumer the scheduler reports
// what it considered) and that is not about to get the default class.
func WantsTally(in ClaimInput) bool {
	claim := in.Claim
	return claim.Spec.VolumeName == "" && in.Match == nil &&
		!metav1.HasAnnotation(claim.ObjectMeta, storagehelpers.AnnBindCompleted) &&
		!DelayBinding(in.Class) && (ClaimHasClass(claim) || in.DefaultClass == nil)
}

// noVolumeFitsEvent reports the tally, after the reference's waiting event.
// Not when no PV exists (the tally would say nothing), nor when the tally
// counts a fitting PV: FindBest skipped it because another claim has
// reserved it and is binding it now, and the claim's next sync counts it as
// bound to that claim. The event repeats (a waiting state); its situation
// leaves out the volumes of other classes, whose number changing is no news
// for this claim.
func noVolumeFitsEvent(in ClaimInput) (Event, bool) {
	t := in.Tally
	if t == nil || !WantsTally(in) || t.Considered == 0 || t.Available > 0 {
		return Event{}, false
	}
	e := claimEvent(v1.EventTypeNormal, EventNoVolumeFits, t.String(), true)
	e.Situation = t.WithOtherClass(-t.otherClass).String()
	return e, true
}

// decideProvision hands the claim to the provisioner of its class
// (ExternalProvisioner): a migrated in-tree plugin's claims go to its CSI
// driver; any other in-tree name fails, as there are no in-tree plugins here.
func decideProvision(className string, class *storagev1.StorageClass) ClaimDecision {
	if class == nil {
		msg := fmt.Sprintf("storageclass.storage.k8s.io %q not found", className)
		return ClaimDecision{Action: ClaimPending, Note: "the claim's class does not exist",
			Events: []Event{claimEvent(v1.EventTypeWarning, EventProvisioningFailed, msg, true)}}
	}
	provisioner, err := ExternalProvisioner(class)
	if err != nil {
		return ClaimDecision{Action: ClaimPending, Note: "the class has no external provisioner",
			Events: []Event{claimEvent(v1.EventTypeWarning, EventProvisioningFailed, err.Error(), true)}}
	}
	return ClaimDecision{Action: ClaimProvision, Provisioner: provisioner,
		Note: "waiting for the provisioner of class " + className,
		Events: []Event{claimEvent(v1.EventTypeNormal, EventExternalProvisioning,
			MsgExternalProvisioning(provisioner), true)}}
}

func waitForConsumerEvent(pods []*v1.Pod) Event {
	if names := UnscheduledPods(pods); len(names) > 0 {
		return claimEvent(v1.EventTypeNormal, EventWaitForPodScheduled, MsgWaitForPodScheduled(names), true)
	}
	return claimEvent(v1.EventTypeNormal, EventWaitForFirstConsumer, MsgWaitForFirstConsumer, true)
}

// UnscheduledPods names the live pods that have no node yet, sorted (the
// reference lists them in cache order).
func UnscheduledPods(pods []*v1.Pod) []string {
	var names []string
	for _, pod := range pods {
		if pod.Spec.NodeName == "" && !PodTerminated(pod) {
			names = append(names, pod.Name)
		}
	}
	sort.Strings(names)
	return names
}

// PodTerminated reports whether a pod no longer uses its volumes (the
// reference's volumeutil.IsPodTerminated): it ended,
// or it is being deleted and none of its containers runs.
func PodTerminated(pod *v1.Pod) bool {
	s := pod.Status
	if s.Phase == v1.PodFailed || s.Phase == v1.PodSucceeded {
		return true
	}
	return pod.DeletionTimestamp != nil && notRunning(s.InitContainerStatuses) &&
		notRunning(s.ContainerStatuses) && notRunning(s.EphemeralContainerStatuses)
}

func notRunning(statuses []v1.ContainerStatus) bool {
	return !slices.ContainsFunc(statuses, func(s v1.ContainerStatus) bool {
		return s.State.Terminated == nil && s.State.Waiting == nil
	})
}
