package snapshotbinding

import (
	"errors"
	"slices"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"

	"github.com/volplane/volplane/internal/snapshotapi"
)

// ContentFacts is what the loop read for one VolumeSnapshotContent.
type ContentFacts struct {
	Content *snapv1.VolumeSnapshotContent
	// Snapshot is the snapshot the content's volumeSnapshotRef names
	// (namespace and name), nil if none.
	Snapshot *snapv1.VolumeSnapshot
	// SnapshotBypassed says the snapshot of the ref's UID was seen deleted
	// past this loop's finalizers (SkippedFinalizers).
	SnapshotBypassed bool
}

// ContentPlan is what the loop does for one content: add the
// bound-protection finalizer, then annotate it being-deleted; it requeues
// the snapshot whose status lags.
type ContentPlan struct {
	Reason           Reason
	AddFinalizer     bool
	MarkBeingDeleted bool
	// Delete deletes the content: only a group member's, under Delete,
	// whose member snapshot went without it (see orphanedMember), or a
	// dynamic one whose snapshot went past its finalizers
	// (bypassedSnapshot).
	Delete          bool
	RequeueSnapshot bool
	Events          []Event
}

// DecideContent is the reference's syncContent. A content whose snapshot
// is gone, or was recreated under the same name, is never deleted here
// (the reference's data-loss guard: a content copied from another cluster
// must not lose its backend snapshot).
func DecideContent(f ContentFacts) ContentPlan {
	c := f.Content
	if (c.Spec.Source.VolumeHandle == nil) == (c.Spec.Source.SnapshotHandle == nil) {
		// Immutable: no retry.
		return ContentPlan{Reason: ContentInvalid, Events: []Event{warning("ContentValidationError",
			errors.New("Exactly one of VolumeHandle and SnapshotHandle should be specified").Error())}}
	}
	if c.Spec.VolumeSnapshotRef.UID == "" {
		return ContentPlan{Reason: ContentPreBound}
	}
	p := ContentPlan{Reason: ContentInSync}
	if c.DeletionTimestamp == nil && !slices.Contains(c.Finalizers, snapshotapi.ContentFinalizer) {
		p.AddFinalizer = true
		p.Reason = ContentProtect
	}
	s := f.Snapshot
	if s == nil {
		if !p.AddFinalizer {
			p.Reason = ContentSnapGone
		}
		if f.SnapshotBypassed {
			return bypassedSnapshot(c, p)
		}
		return orphanedMember(c, p)
	}
	if s.UID != c.Spec.VolumeSnapshotRef.UID || s.Namespace != c.Spec.VolumeSnapshotRef.Namespace || s.Name != c.Spec.VolumeSnapshotRef.Name {
		if !p.AddFinalizer {
			p.Reason = ContentSnapNewer
		}
		if f.SnapshotBypassed {
			return bypassedSnapshot(c, p)
		}
		return orphanedMember(c, p)
	}
	p.RequeueSnapshot = NeedsMirror(s, c)
	if s.DeletionTimestamp != nil && (slices.Contains(s.Finalizers, snapshotapi.AsSourceFinalizer) || slices.Contains(s.Finalizers, snapshotapi.BoundFinalizer)) &&
		!hasAnnotation(c.Annotations, snapshotapi.BeingDeleted) {
		p.MarkBeingDeleted = true
		p.Reason = ContentRelease
	}
	return p
}

// orphanedMember deletes a group member's content, under Delete, whose
// member snapshot is gone: a member deleted before it was bound to its
// content (the group deleted right after it made the member) designates no
// content, so its deletion never reached this one. The data-loss guard does
// not apply: the backend snapshot of a member is the group's, deleted with
// the group and never by the sidecar for the member (it only lets the
// content go), so deleting the object deletes no data. Any other content
// whose snapshot is gone is kept, as the reference keeps it.
func orphanedMember(c *snapv1.VolumeSnapshotContent, p ContentPlan) ContentPlan {
	if !hasAnnotation(c.Annotations, snapshotapi.GroupHandleAnnotation) ||
		c.Spec.DeletionPolicy != snapv1.VolumeSnapshotContentDelete || c.DeletionTimestamp != nil {
		return p
	}
	p.Reason = ContentMemberOrphaned
	p.MarkBeingDeleted = !hasAnnotation(c.Annotations, snapshotapi.BeingDeleted)
	p.Delete = true
	return p
}

// bypassedSnapshot deletes, under Delete, the dynamic content this loop
// made for a snapshot the API server deleted past its finalizers, as the
// snapshot's deletion would have: a DELETE that read the snapshot before
// its finalizers were added removes it without a deletion timestamp once
// they are (the registry decides "no finalizers, delete now" on its first
// read and does not look again), while the sync that added them goes on to
// create its content (the soak, seed 42: the content and its backend
// snapshot were left behind). The data-loss guard does not apply: the
// snapshot was this cluster's, seen deleted, and the content is the one
// made for it (its name is the snapshot's UID's).
func bypassedSnapshot(c *snapv1.VolumeSnapshotContent, p ContentPlan) ContentPlan {
	r := c.Spec.VolumeSnapshotRef
	if c.Spec.Source.VolumeHandle == nil || c.Name != snapshotapi.ContentName(r.UID) || hasAnnotation(c.Annotations, snapshotapi.GroupHandleAnnotation) ||
		c.Spec.DeletionPolicy != snapv1.VolumeSnapshotContentDelete || c.DeletionTimestamp != nil {
		return p
	}
	p.Reason = ContentSnapshotBypassed
	p.MarkBeingDeleted = !hasAnnotation(c.Annotations, snapshotapi.BeingDeleted)
	p.Delete = true
	return p
}

// SkippedFinalizers says a snapshot's delete event shows it deleted past
// this loop's finalizers: it carried one, with no deletion timestamp (a
// deletion the finalizers held always sets one first).
func SkippedFinalizers(s *snapv1.VolumeSnapshot) bool {
	return s.DeletionTimestamp == nil &&
		(slices.Contains(s.Finalizers, snapshotapi.AsSourceFinalizer) || slices.Contains(s.Finalizers, snapshotapi.BoundFinalizer))
}

// Warning and Normal are the event types, for tests.
const (
	Warning = corev1.EventTypeWarning
	Normal  = corev1.EventTypeNormal
)

// ManagedBy is the node a new dynamic content of a snapshot of pv is
// labelled with (snapshotapi.ManagedByLabel, the reference's distributed
// snapshotting), so that in node deployment only that node's snapshotter
// serves it: the one node of nodes that the PV's required node affinity
// admits. "" when the PV has no such affinity, or it admits no node or
// more than one (the reference labels the first node the lister returns
// that matches, which for a zonal volume is any node of the zone; no label
// leaves the choice to the snapshotters, which find the volume's node).
func ManagedBy(pv *corev1.PersistentVolume, nodes []*corev1.Node) string {
	if pv == nil || pv.Spec.NodeAffinity == nil || pv.Spec.NodeAffinity.Required == nil ||
		len(pv.Spec.NodeAffinity.Required.NodeSelectorTerms) == 0 {
		return ""
	}
	found := ""
	for _, n := range nodes {
		if ok, err := corev1helpers.MatchNodeSelectorTerms(n, pv.Spec.NodeAffinity.Required); err != nil || !ok {
			continue
		}
		if found != "" && found != n.Name {
			return ""
		}
		found = n.Name
	}
	return found
}
