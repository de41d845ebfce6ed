package snapshotbinding

import corev1 "k8s.io/api/core/v1"

// Reason says why a plan is what it is: a closed set, for logs and tests.
type Reason string

// The reasons of a snapshot plan.
const (
	// Invalid: the snapshot's source is not exactly one of a claim and a
	// content.
	Invalid Reason = "Invalid"
	// NoClass: its class is missing, or no single default class matches
	// its volume's driver.
	NoClass Reason = "NoClass"
	// SetDefaultClass: the default class of its volume's driver is written
	// into its spec.
	SetDefaultClass Reason = "SetDefaultClass"
	// WaitingForSource: its claim is missing, not bound, or its volume not
	// a CSI volume bound to it.
	WaitingForSource Reason = "WaitingForSource"
	// ClaimDeleting: its claim is being deleted before a content was made
	// (external-snapshotter #349): refused.
	ClaimDeleting Reason = "ClaimDeleting"
	// CreateContent: the dynamic content is created.
	CreateContent Reason = "CreateContent"
	// BindContent: the pre-provisioned content gets the snapshot's UID.
	BindContent Reason = "BindContent"
	// ContentMissing, ContentMismatch, Misbound: the content it names or
	// is bound to is missing, of the other kind, or points elsewhere.
	ContentMissing  Reason = "ContentMissing"
	ContentMismatch Reason = "ContentMismatch"
	Misbound        Reason = "Misbound"
	// GroupMemberWaiting: a member of a group snapshot whose content the
	// group loop has not bound yet.
	GroupMemberWaiting Reason = "GroupMemberWaiting"
	// Mirrored: bound both ways; its status follows the content's.
	Mirrored Reason = "Mirrored"
	// InSync: nothing to do.
	InSync Reason = "InSync"
	// DeletePending: being deleted while a Pending claim restores from it
	// or while its group lives: kept.
	DeletePending Reason = "DeletePending"
	// Deleting: being deleted; the content is annotated (and deleted under
	// Delete) and the finalizers go as the reference lets them.
	Deleting Reason = "Deleting"
)

// The reasons of a content plan.
const (
	ContentInvalid   Reason = "ContentInvalid"
	ContentPreBound  Reason = "ContentPreBound"
	ContentProtect   Reason = "ContentProtect"
	ContentRelease   Reason = "ContentRelease"
	ContentInSync    Reason = "ContentInSync"
	ContentSnapGone  Reason = "ContentSnapshotGone"
	ContentSnapNewer Reason = "ContentSnapshotRecreated"
	// ContentMemberOrphaned: a group member's content under Delete whose
	// member snapshot is gone is deleted (orphanedMember).
	ContentMemberOrphaned Reason = "ContentMemberOrphaned"
	// ContentSnapshotBypassed: a dynamic content under Delete whose
	// snapshot the API server deleted past its finalizers is deleted
	// (bypassedSnapshot).
	ContentSnapshotBypassed Reason = "ContentSnapshotBypassed"
)

// Event is one event the loop records on the object it decided about,
// with the reference's type, reason and message.
type Event struct {
	Type, Reason, Message string
}

func warning(reason, message string) Event {
	return Event{Type: corev1.EventTypeWarning, Reason: reason, Message: message}
}

func normal(reason, message string) Event {
	return Event{Type: corev1.EventTypeNormal, Reason: reason, Message: message}
}
