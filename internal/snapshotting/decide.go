package snapshotting

import (
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"

	"github.com/volplane/volplane/internal/snapshotapi"
)

// Step is what the loop does next with one content.
type Step string

const (
	// StepNone: nothing to do for now.
	StepNone Step = "None"
	// StepCreate: set the being-created annotation (if absent), call
	// CreateSnapshot with BuildCreate's request, write the status, then
	// remove the annotation. A dynamic content not ready yet is created
	// again: CreateSnapshot is idempotent and answers the readiness.
	StepCreate Step = "Create"
	// StepCheck: ListSnapshots(snapshot_id) for a snapshot the loop did not
	// take (pre-provisioned, or a group member), and write the status.
	StepCheck Step = "Check"
	// StepDelete: DeleteSnapshot(Plan.SnapshotID), then drop the finalizer.
	StepDelete Step = "Delete"
	// StepRelease: drop snapshotapi.ContentFinalizer; the backend snapshot
	// is kept (Retain, a group member, or no snapshot was ever recorded).
	StepRelease Step = "Release"
	// StepClearCreating: the content is ready but still carries the
	// being-created annotation (a crash between the two writes): remove it.
	StepClearCreating Step = "ClearCreating"
)

// Reason says why a Plan was chosen; a closed set.
type Reason string

const (
	ReasonReady            Reason = "the snapshot is ready to use"
	ReasonNotTaken         Reason = "the snapshot is not taken yet"
	ReasonNotReady         Reason = "the snapshot is not ready to use yet"
	ReasonPreProvisioned   Reason = "the pre-provisioned snapshot was not checked yet"
	ReasonGroupMember      Reason = "a member of a group snapshot: the group's loop takes it"
	ReasonNoSource         Reason = "the content names neither a volume nor a snapshot"
	ReasonDeletePolicy     Reason = "being deleted under the Delete policy"
	ReasonRetainPolicy     Reason = "being deleted under the Retain policy: the snapshot is kept"
	ReasonGroupDelete      Reason = "being deleted as a member of a group snapshot: the group's loop deletes the snapshot"
	ReasonNothingToDelete  Reason = "being deleted, and no snapshot was ever recorded"
	ReasonReleased         Reason = "being deleted and already released"
	ReasonStillCreating    Reason = "being deleted while CreateSnapshot has not answered (being-created): the create goes on so its snapshot is not leaked"
	ReasonNotSnapshotsTurn Reason = "being deleted, but its VolumeSnapshot has not marked it being-deleted yet"
	ReasonNotStarted       Reason = "being deleted before its snapshot was asked for: none is taken"
)

// Plan is what Decide chose for one content.
type Plan struct {
	Step   Step
	Reason Reason
	// SnapshotID is the snapshot to check (StepCheck) or delete
	// (StepDelete).
	SnapshotID string
	// DeletionPending: the content is being deleted but may not be released
	// yet (its create has not answered, or its snapshot has not said it is
	// being deleted). The loop comes back to it after a delay whatever the
	// events: nothing may depend on one informer event arriving.
	DeletionPending bool
}

// Decide is the sidecar's syncContent for one content of a served driver:
// deletion first (only once the snapshot-controller marked the content
// being-deleted, or for an unbound pre-provisioned content, and never while
// a CreateSnapshot has not answered), then the create of a dynamic content,
// then the readiness of a snapshot taken elsewhere. Unlike the reference,
// no first CreateSnapshot is sent for a content already being deleted.
func Decide(c *snapv1.VolumeSnapshotContent) Plan {
	deleting := c.DeletionTimestamp != nil
	if deleting {
		if p, ok := decideDelete(c); ok {
			return p
		}
	}
	p := decideLive(c)
	if deleting && p.Step == StepCreate && !creating(c) && SnapshotID(c) == "" {
		// No create was ever sent: none is started for a content that is
		// going away, so none can leak.
		p = Plan{Step: StepNone, Reason: ReasonNotStarted}
	}
	if deleting {
		p.DeletionPending = true
		if p.Step == StepNone && p.Reason != ReasonNotStarted {
			p.Reason = ReasonNotSnapshotsTurn
			if creating(c) {
				p.Reason = ReasonStillCreating
			}
		}
	}
	return p
}

// decideDelete is the deletion half; ok is false while the content may not
// be released yet (then it is synced as a live one).
func decideDelete(c *snapv1.VolumeSnapshotContent) (Plan, bool) {
	if !mayDelete(c) {
		return Plan{}, false
	}
	release := Plan{Step: StepRelease}
	if !hasFinalizer(c) {
		release.Step, release.Reason = StepNone, ReasonReleased
		return release, true
	}
	switch {
	case c.Spec.DeletionPolicy != snapv1.VolumeSnapshotContentDelete:
		release.Reason = ReasonRetainPolicy
	case c.Status != nil && c.Status.VolumeGroupSnapshotHandle != nil:
		release.Reason = ReasonGroupDelete
	case SnapshotID(c) == "":
		release.Reason = ReasonNothingToDelete
	default:
		return Plan{Step: StepDelete, Reason: ReasonDeletePolicy, SnapshotID: SnapshotID(c)}, true
	}
	return release, true
}

// mayDelete is the reference's shouldDelete for a content being deleted:
// an unbound pre-provisioned content at once; otherwise only once the
// snapshot-controller set the being-deleted annotation and no
// CreateSnapshot is pending.
func mayDelete(c *snapv1.VolumeSnapshotContent) bool {
	if c.Spec.Source.SnapshotHandle != nil && c.Spec.VolumeSnapshotRef.UID == "" {
		return true
	}
	if creating(c) {
		return false
	}
	_, ok := c.Annotations[snapshotapi.BeingDeleted]
	return ok
}

// decideLive is the create and readiness half.
func decideLive(c *snapv1.VolumeSnapshotContent) Plan {
	member := GroupMember(c)
	if c.Spec.Source.VolumeHandle != nil && c.Status == nil && !member {
		return Plan{Step: StepCreate, Reason: ReasonNotTaken}
	}
	if Ready(c) {
		if creating(c) {
			return Plan{Step: StepClearCreating, Reason: ReasonReady}
		}
		return Plan{Step: StepNone, Reason: ReasonReady}
	}
	if c.Spec.Source.SnapshotHandle != nil {
		return Plan{Step: StepCheck, Reason: ReasonPreProvisioned, SnapshotID: *c.Spec.Source.SnapshotHandle}
	}
	if c.Status != nil && c.Status.VolumeGroupSnapshotHandle != nil && c.Status.SnapshotHandle != nil {
		return Plan{Step: StepCheck, Reason: ReasonNotReady, SnapshotID: *c.Status.SnapshotHandle}
	}
	if member {
		return Plan{Step: StepNone, Reason: ReasonGroupMember}
	}
	if c.Spec.Source.VolumeHandle == nil {
		return Plan{Step: StepNone, Reason: ReasonNoSource}
	}
	return Plan{Step: StepCreate, Reason: ReasonNotReady}
}

// SnapshotID is the driver's ID of the content's snapshot: the status's
// (what CreateSnapshot answered), else the pre-provisioned spec's; "" when
// neither is known.
func SnapshotID(c *snapv1.VolumeSnapshotContent) string {
	if c.Status != nil && c.Status.SnapshotHandle != nil && *c.Status.SnapshotHandle != "" {
		return *c.Status.SnapshotHandle
	}
	if c.Spec.Source.SnapshotHandle != nil {
		return *c.Spec.Source.SnapshotHandle
	}
	return ""
}

// Ready says whether the content's status says readyToUse.
func Ready(c *snapv1.VolumeSnapshotContent) bool {
	return c.Status != nil && c.Status.ReadyToUse != nil && *c.Status.ReadyToUse
}

// GroupMember says whether the content is a member of a group snapshot
// (the group's loop creates its snapshot, never this one).
func GroupMember(c *snapv1.VolumeSnapshotContent) bool {
	_, ok := c.Annotations[snapshotapi.GroupHandleAnnotation]
	return ok
}

// Creating says whether a CreateSnapshot may be running for the content.
func Creating(c *snapv1.VolumeSnapshotContent) bool { return creating(c) }

func creating(c *snapv1.VolumeSnapshotContent) bool {
	_, ok := c.Annotations[snapshotapi.BeingCreated]
	return ok
}

func hasFinalizer(c *snapv1.VolumeSnapshotContent) bool {
	for _, f := range c.Finalizers {
		if f == snapshotapi.ContentFinalizer {
			return true
		}
	}
	return false
}

// WithoutFinalizer is the content's finalizers without
// snapshotapi.ContentFinalizer, in order.
func WithoutFinalizer(c *snapv1.VolumeSnapshotContent) []string {
	out := make([]string, 0, len(c.Finalizers))
	for _, f := range c.Finalizers {
		if f != snapshotapi.ContentFinalizer {
			out = append(out, f)
		}
	}
	return out
}
