package binding

import (
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	storagehelpers "k8s.io/component-helpers/storage/volume"
)

// VolumeAction is what a volume sync must do besides writing Phase.
type VolumeAction int

const (
	// VolumeNone: only write Phase (SetVolumePhase; nil when unchanged).
	VolumeNone VolumeAction = iota
	// VolumeCheckLive: the claim was missing from the cache (or had another
	// UID); read it from the API server and decide again with LiveChecked.
	// A stale cache must never release a PV that is in use.
	VolumeCheckLive
	// VolumeNudgeClaim: enqueue the claim; its sync finishes the bind. Then
	// Phase, if any.
	VolumeNudgeClaim
	// VolumeUnbind: UnbindVolumeSpec, then Phase (Available).
	VolumeUnbind
	// VolumeRecycle: Phase (Released) first, then scrub the volume and
	// unbind it; on failure Failed + Warning VolumeFailedRecycle.
	VolumeRecycle
)

func (a VolumeAction) String() string {
	switch a {
	case VolumeCheckLive:
		return "CheckLive"
	case VolumeNudgeClaim:
		return "NudgeClaim"
	case VolumeUnbind:
		return "Unbind"
	case VolumeRecycle:
		return "Recycle"
	}
	return "None"
}

// Reclaim names the reclaim branch a released volume took (for logs and
// explain: why a PV stays Released).
type Reclaim int

const (
	ReclaimNone           Reclaim = iota // the volume is not released
	ReclaimRetain                        // policy Retain: stays Released
	ReclaimExternal                      // policy Delete: the CSI / external provisioner deletes it
	ReclaimMigrated                      // migrated in-tree volume: its CSI driver handles it
	ReclaimRecycle                       // policy Recycle: scrub and make Available
	ReclaimRecycleBlocked                // policy Recycle, but pods still use the claim
	ReclaimFailed                        // no deleter for the volume, or an unknown policy
)

func (r Reclaim) String() string {
	return [...]string{"None", "Retain", "External", "Migrated", "Recycle", "RecycleBlocked", "Failed"}[r]
}

// VolumeInput is everything a volume sync needs to decide.
type VolumeInput struct {
	Volume *v1.PersistentVolume
	// Claim is the claim named by the PV's claimRef (namespace/name), nil when
	// not found. With LiveChecked it comes from a live API read.
	Claim       *v1.PersistentVolumeClaim
	LiveChecked bool
	// Pods are the pods that reference the claim's name (Recycle waits for them).
	Pods []*v1.Pod
}

// VolumeDecision is what a volume sync must do.
type VolumeDecision struct {
	Action VolumeAction
	// Phase to write ("" leaves the phase alone), with its status message.
	Phase   v1.PersistentVolumePhase
	Message string
	Reclaim Reclaim
	Events  []Event
	Note    string
}

func (d VolumeDecision) String() string {
	var b strings.Builder
	b.WriteString(d.Action.String())
	if d.Phase != "" {
		fmt.Fprintf(&b, " phase=%s", d.Phase)
	}
	if d.Reclaim != ReclaimNone {
		fmt.Fprintf(&b, " reclaim=%s", d.Reclaim)
	}
	if d.Note != "" {
		fmt.Fprintf(&b, " (%s)", d.Note)
	}
	for _, e := range d.Events {
		fmt.Fprintf(&b, "; event %s", e)
	}
	return b.String()
}

// DecideVolume decides a volume sync.
func DecideVolume(in VolumeInput) VolumeDecision {
	pv := in.Volume
	ref := pv.Spec.ClaimRef
	if ref == nil {
		return VolumeDecision{Phase: v1.VolumeAvailable, Note: "unused"}
	}
	if ref.UID == "" {
		return VolumeDecision{Phase: v1.VolumeAvailable, Note: "pre-bound to " + ClaimRefKey(ref) + ", waiting for its claim"}
	}
	claim := in.Claim
	if claim != nil && claim.UID != ref.UID {
		if !in.LiveChecked {
			return VolumeDecision{Action: VolumeCheckLive, Note: "cached claim has another UID"}
		}
		claim = nil // deleted and re-created under the same name
	}
	if claim == nil && !in.LiveChecked && !releasedOrFailed(pv) {
		return VolumeDecision{Action: VolumeCheckLive, Note: "claim not in cache"}
	}
	switch {
	case claim == nil:
		return released(in, "claim "+ClaimRefKey(ref)+" is gone")
	case claim.Spec.VolumeName == "":
		return decideClaimNotBound(pv, claim)
	case claim.Spec.VolumeName == pv.Name && claim.Status.Phase != v1.ClaimBound:
		// The claim side is not done: a bind that stopped before its last
		// write, or a Lost claim whose volume came back pointing at it (a
		// restored PV). Nothing changes on the claim to wake its sync, and
		// the resync is only a safety net, so wake it here.
		return VolumeDecision{Action: VolumeNudgeClaim, Phase: v1.VolumeBound, Note: "bound; the claim is not Bound yet"}
	case claim.Spec.VolumeName == pv.Name:
		return VolumeDecision{Phase: v1.VolumeBound, Note: "bound"}
	case metav1.HasAnnotation(pv.ObjectMeta, storagehelpers.AnnDynamicallyProvisioned) &&
		pv.Spec.PersistentVolumeReclaimPolicy == v1.PersistentVolumeReclaimDelete:
		// Provisioned for a claim that got another volume: lost a race, delete.
		return released(in, "claim bound to "+claim.Spec.VolumeName+"; provisioned volume not needed")
	}
	return VolumeDecision{Action: VolumeUnbind, Phase: v1.VolumeAvailable,
		Note: "claim bound to " + claim.Spec.VolumeName + "; freeing this volume"}
}

// decideClaimNotBound: the PV points at a claim that does not point back
// (yet). The claim sync binds it, unless the volume modes make that impossible.
func decideClaimNotBound(pv *v1.PersistentVolume, claim *v1.PersistentVolumeClaim) VolumeDecision {
	if VolumeMode(pv) != claimVolumeMode(claim) {
		return VolumeDecision{Note: "volume mode differs from the claim's", Events: []Event{
			volumeEvent(v1.EventTypeWarning, EventVolumeMismatch, fmt.Sprintf(
				"Cannot bind PersistentVolume to requested PersistentVolumeClaim %q due to incompatible volumeMode.", claim.Name), true),
			claimEvent(v1.EventTypeWarning, EventVolumeMismatch, fmt.Sprintf(
				"Cannot bind PersistentVolume %q to requested PersistentVolumeClaim due to incompatible volumeMode.", pv.Name), true),
		}}
	}
	return VolumeDecision{Action: VolumeNudgeClaim, Note: "claim does not point at the volume yet"}
}

func releasedOrFailed(pv *v1.PersistentVolume) bool {
	return pv.Status.Phase == v1.VolumeReleased || pv.Status.Phase == v1.VolumeFailed
}

// released marks the volume Released (a Failed one stays Failed so the user
// sees what went wrong) and applies its reclaim policy.
func released(in VolumeInput, note string) VolumeDecision {
	d := VolumeDecision{Note: note}
	if !releasedOrFailed(in.Volume) {
		d.Phase = v1.VolumeReleased
	}
	return reclaim(in, d)
}

func reclaim(in VolumeInput, d VolumeDecision) VolumeDecision {
	pv := in.Volume
	if pv.Annotations[storagehelpers.AnnMigratedTo] != "" {
		d.Reclaim = ReclaimMigrated
		return d
	}
	switch pv.Spec.PersistentVolumeReclaimPolicy {
	case v1.PersistentVolumeReclaimRetain:
		d.Reclaim = ReclaimRetain
	case v1.PersistentVolumeReclaimRecycle:
		return recycle(in, d)
	case v1.PersistentVolumeReclaimDelete:
		if msg := deleterError(pv); msg != "" {
			return failed(pv, d, EventVolumeFailedDelete, msg)
		}
		d.Reclaim = ReclaimExternal
	default:
		return failed(pv, d, EventVolumeUnknownReclaimPolicy, MsgUnknownReclaimPolicy)
	}
	return d
}

// recycle waits while live pods still reference the claim name and no new
// claim of that name exists (with a new claim, those pods use the new one).
func recycle(in VolumeInput, d VolumeDecision) VolumeDecision {
	users := usingPods(in.Pods)
	if len(users) > 0 && in.Claim == nil {
		d.Reclaim = ReclaimRecycleBlocked
		d.Events = []Event{volumeEvent(v1.EventTypeNormal, EventVolumeFailedRecycle,
			"Volume is used by pods: "+strings.Join(users, ","), true)}
		return d
	}
	d.Action = VolumeRecycle
	d.Reclaim = ReclaimRecycle
	return d
}

// deleterError says why no one here can delete the volume, "" when the
// CSI / external provisioner owns the deletion. volplane has no in-tree
// volume plugins, so a "kubernetes.io/" provisioner or a non-CSI volume gets
// the error the reference reports when it finds no plugin.
func deleterError(pv *v1.PersistentVolume) string {
	if name := pv.Annotations[storagehelpers.AnnDynamicallyProvisioned]; name != "" {
		if strings.HasPrefix(name, "kubernetes.io/") {
			return "no volume plugin matched name: " + name
		}
		return ""
	}
	if pv.Spec.CSI != nil {
		return ""
	}
	return fmt.Sprintf("error getting deleter volume plugin for volume %q: no volume plugin matched", pv.Name)
}

// failed moves the volume to Failed; the event is emitted only on the change.
func failed(pv *v1.PersistentVolume, d VolumeDecision, reason, message string) VolumeDecision {
	d.Reclaim = ReclaimFailed
	if pv.Status.Phase == v1.VolumeFailed {
		d.Phase = ""
		return d
	}
	d.Phase = v1.VolumeFailed
	d.Message = message
	d.Events = []Event{volumeEvent(v1.EventTypeWarning, reason, message, false)}
	return d
}

// usingPods lists live pods as namespace/name, sorted.
func usingPods(pods []*v1.Pod) []string {
	var names []string
	for _, pod := range pods {
		if !PodTerminated(pod) {
			names = append(names, pod.Namespace+"/"+pod.Name)
		}
	}
	sort.Strings(names)
	return names
}
