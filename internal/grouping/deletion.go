package grouping

import (
	"fmt"
	"slices"
	"strings"

	vgsv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	v1 "k8s.io/api/core/v1"

	"github.com/volplane/volplane/internal/snapshotapi"
)

// decideDeletion is processGroupSnapshotWithDeletionTimestamp: wait while
// a member is being restored, mark the bound content as being deleted,
// give it its finalizer if it lacks one and delete it under Delete, delete the members, and drop the group's
// finalizer once no content under Delete is left.
//
// The reference looks the dynamic content up by its fixed name only when
// the group's status names none, through a test that is never true (it
// compares the address of a field with nil), so a group deleted before
// its status was written leaves its content behind; ContentNameOf falls
// back to the fixed name.
func decideDeletion(f GroupFacts) Plan {
	g := f.Group
	if !slices.Contains(g.Finalizers, snapshotapi.GroupBoundFinalizer) {
		return wait(nil)
	}
	c := f.Content
	if c != nil && !pointsTo(c, g) {
		c = nil
	}
	deleteContent := c != nil && c.Spec.DeletionPolicy == snapv1.VolumeSnapshotContentDelete
	members := Members(f.Snapshots, g)
	for _, m := range members {
		if restoring(m, f.Claims) {
			msg := fmt.Sprintf("Snapshot %s belonging to VolumeGroupSnapshot %s is being used to restore a PVC", Key(m.Namespace, m.Name), GroupKey(g))
			return Plan{Step: Wait, Events: []Event{warning("SnapshotDeletePending", msg)}, Err: fmt.Errorf("%s: snapshot is in use, will retry deletion", msg)}
		}
	}
	if c != nil && c.Annotations[snapshotapi.GroupBeingDeleted] == "" {
		marked := c.DeepCopy()
		if marked.Annotations == nil {
			marked.Annotations = map[string]string{}
		}
		marked.Annotations[snapshotapi.GroupBeingDeleted] = "yes"
		return Plan{Step: MarkContent, Content: marked}
	}
	if deleteContent && c.DeletionTimestamp == nil && !slices.Contains(c.Finalizers, snapshotapi.GroupContentFinalizer) {
		// Deleted without it, the content would go before the sidecar
		// deleted its group snapshot, leaving that behind.
		return Plan{Step: AddContentFinalizer, Content: withContentFinalizer(c)}
	}
	if deleteContent && c.DeletionTimestamp == nil {
		return Plan{Step: DeleteContent, Content: c}
	}
	for _, m := range members {
		if m.DeletionTimestamp == nil {
			return Plan{Step: DeleteMember, Snapshot: m}
		}
	}
	if deleteContent {
		// The content's finalizer goes once the driver deleted the group
		// snapshot; the group waits for it.
		return wait(nil)
	}
	return Plan{Step: RemoveFinalizer}
}

// withContentFinalizer is a copy of c with GroupContentFinalizer added.
func withContentFinalizer(c *vgsv1.VolumeGroupSnapshotContent) *vgsv1.VolumeGroupSnapshotContent {
	n := c.DeepCopy()
	n.Finalizers = append(n.Finalizers, snapshotapi.GroupContentFinalizer)
	return n
}

// pointsTo says whether the content's ref names the group, UID included.
func pointsTo(c *vgsv1.VolumeGroupSnapshotContent, g *vgsv1.VolumeGroupSnapshot) bool {
	r := c.Spec.VolumeGroupSnapshotRef
	return r.Name == g.Name && r.Namespace == g.Namespace && r.UID == g.UID
}

// Members are the snapshots that name the group (and its UID) as their
// owner, sorted by name.
func Members(snapshots map[string]*snapv1.VolumeSnapshot, g *vgsv1.VolumeGroupSnapshot) []*snapv1.VolumeSnapshot {
	var out []*snapv1.VolumeSnapshot
	for _, s := range snapshots {
		if s != nil && OwnedBy(s, g) {
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b *snapv1.VolumeSnapshot) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// restoring says whether a Pending claim of the snapshot's namespace
// restores from it (isVolumeBeingCreatedFromSnapshot).
func restoring(vs *snapv1.VolumeSnapshot, claims []*v1.PersistentVolumeClaim) bool {
	for _, c := range claims {
		if c == nil || c.Namespace != vs.Namespace || c.Status.Phase != v1.ClaimPending {
			continue
		}
		if ds := c.Spec.DataSource; ds != nil && ds.Kind == snapshotapi.KindSnapshot && ds.APIGroup != nil && *ds.APIGroup == snapshotapi.Group && ds.Name == vs.Name {
			return true
		}
		if ds := c.Spec.DataSourceRef; ds != nil && ds.Kind == snapshotapi.KindSnapshot && ds.APIGroup != nil && *ds.APIGroup == snapshotapi.Group &&
			ds.Name == vs.Name && (ds.Namespace == nil || *ds.Namespace == "" || *ds.Namespace == vs.Namespace) {
			return true
		}
	}
	return false
}

// DecideGroupContent is the snapshot-controller's step for a group
// content (syncGroupSnapshotContent): check it names exactly one kind of
// source, and add its finalizer once it is bound. It never deletes a
// content whose group is gone.
func DecideGroupContent(c *vgsv1.VolumeGroupSnapshotContent) Plan {
	s := c.Spec.Source
	if (s.GroupSnapshotHandles == nil) == (len(s.VolumeHandles) == 0) {
		msg := "Exactly one of GroupSnapshotHandles and VolumeHandles should be specified"
		return Plan{Step: Wait, Events: []Event{warning("GroupContentValidationError", msg)}, Err: fmt.Errorf("%s", msg)}
	}
	if c.Spec.VolumeGroupSnapshotRef.UID == "" {
		return wait(nil)
	}
	if c.DeletionTimestamp == nil && !slices.Contains(c.Finalizers, snapshotapi.GroupContentFinalizer) {
		return Plan{Step: AddContentFinalizer, Content: withContentFinalizer(c)}
	}
	return wait(nil)
}

// DecideBypassedContent is the step for a group content whose group was
// seen deleted past its finalizer (GroupSkippedFinalizer): a DELETE that
// read the group before its finalizer was added removes it at once once
// it is, while the sync that added it goes on to create the content. The
// dynamic content made for that group (named after its UID) is then
// deleted under Delete as the group's deletion would have: its finalizer
// (so the sidecar deletes the group snapshot first), the being-deleted
// mark, the delete. Any other content is left as DecideGroupContent
// leaves it.
func DecideBypassedContent(c *vgsv1.VolumeGroupSnapshotContent) (Plan, bool) {
	r := c.Spec.VolumeGroupSnapshotRef
	if len(c.Spec.Source.VolumeHandles) == 0 || r.UID == "" || c.Name != snapshotapi.GroupContentName(r.UID) ||
		c.Spec.DeletionPolicy != snapv1.VolumeSnapshotContentDelete {
		return Plan{}, false
	}
	switch {
	case c.DeletionTimestamp != nil:
		return wait(nil), true
	case !slices.Contains(c.Finalizers, snapshotapi.GroupContentFinalizer):
		return Plan{Step: AddContentFinalizer, Content: withContentFinalizer(c)}, true
	case c.Annotations[snapshotapi.GroupBeingDeleted] == "":
		marked := c.DeepCopy()
		if marked.Annotations == nil {
			marked.Annotations = map[string]string{}
		}
		marked.Annotations[snapshotapi.GroupBeingDeleted] = "yes"
		return Plan{Step: MarkContent, Content: marked}, true
	}
	return Plan{Step: DeleteContent, Content: c}, true
}

// GroupSkippedFinalizer says a group's delete event shows it deleted past
// its finalizer: it carried it, with no deletion timestamp (a deletion
// the finalizer held always sets one first).
func GroupSkippedFinalizer(g *vgsv1.VolumeGroupSnapshot) bool {
	return g.DeletionTimestamp == nil && slices.Contains(g.Finalizers, snapshotapi.GroupBoundFinalizer)
}
