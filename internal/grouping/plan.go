package grouping

import (
	vgsv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	v1 "k8s.io/api/core/v1"
)

// Event is one event to record on the object the plan is about.
type Event struct {
	Type, Reason, Message string
}

func warning(reason, message string) Event {
	return Event{Type: v1.EventTypeWarning, Reason: reason, Message: message}
}

func normal(reason, message string) Event {
	return Event{Type: v1.EventTypeNormal, Reason: reason, Message: message}
}

// Step is what the snapshot-controller's half does next for a group: a
// closed set.
type Step string

// The steps of DecideGroup and DecideGroupContent, in the order a dynamic
// group goes through them.
const (
	// Wait: nothing to write; Err, if set, is why (retried with backoff).
	Wait Step = "Wait"
	// Fail: write Status (the error, readyToUse false) and the events;
	// retried with backoff (Err).
	Fail Step = "Fail"
	// SetClass writes spec.volumeGroupSnapshotClassName = Class.
	SetClass Step = "SetClass"
	// AddFinalizer adds GroupBoundFinalizer to the group.
	AddFinalizer Step = "AddFinalizer"
	// CreateContent creates Content.
	CreateContent Step = "CreateContent"
	// BindContent patches a pre-provisioned Content's
	// volumeGroupSnapshotRef.uid (and class name) to the group's.
	BindContent Step = "BindContent"
	// CreateMember creates the member VolumeSnapshot Snapshot.
	CreateMember Step = "CreateMember"
	// CreateMemberContent creates the member VolumeSnapshotContent
	// MemberContent.
	CreateMemberContent Step = "CreateMemberContent"
	// SetMemberContentStatus writes MemberContent's status.
	SetMemberContentStatus Step = "SetMemberContentStatus"
	// BindMember writes the member Snapshot's status (bound content name,
	// group name).
	BindMember Step = "BindMember"
	// UpdateStatus writes Status, mirrored from the content.
	UpdateStatus Step = "UpdateStatus"
	// MarkContent sets GroupBeingDeleted on Content.
	MarkContent Step = "MarkContent"
	// DeleteContent deletes Content.
	DeleteContent Step = "DeleteContent"
	// DeleteMember deletes the member Snapshot.
	DeleteMember Step = "DeleteMember"
	// RemoveFinalizer removes GroupBoundFinalizer from the group.
	RemoveFinalizer Step = "RemoveFinalizer"
	// AddContentFinalizer writes Content: the content with
	// GroupContentFinalizer added.
	AddContentFinalizer Step = "AddContentFinalizer"
)

// Plan is DecideGroup's (and DecideGroupContent's) answer: one step and
// what it writes.
type Plan struct {
	Step Step
	// Class is the class name SetClass writes.
	Class string
	// Content is the group content to create, bind, mark or delete.
	Content *vgsv1.VolumeGroupSnapshotContent
	// Snapshot is the member VolumeSnapshot to create, bind or delete.
	Snapshot *snapv1.VolumeSnapshot
	// MemberContent is the member content to create or whose status to
	// write.
	MemberContent *snapv1.VolumeSnapshotContent
	// Status is the group's whole new status (UpdateStatus, Fail).
	Status *vgsv1.VolumeGroupSnapshotStatus
	// Events are recorded on the group (on the content for
	// DecideGroupContent).
	Events []Event
	// Err says why the group waits or failed; the loop retries it.
	Err error
}

func wait(err error) Plan { return Plan{Step: Wait, Err: err} }
