package snapshotbinding

import (
	"errors"
	"fmt"
	"slices"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/snapshotapi"
)

// decideDeletion is the reference's processSnapshotWithDeletionTimestamp:
// kept while a Pending claim restores from it or its group lives; else
// the content (only one pointing back) is annotated being-deleted and,
// under Delete, deleted; the as-source finalizer goes, the bound one once
// the content is gone (or will not go with the snapshot).
//
// Unlike the reference, a snapshot carrying only the in-group finalizer is
// dealt with too: a member the group loop made and deleted (its group
// deleted) before this loop gave it its own finalizers. The reference
// looks only at snapshots with one of those two, so such a member stayed
// Terminating forever, its content left ready over a backend snapshot the
// group's deletion had removed (the soak, seed 230783, under load).
func decideDeletion(f SnapshotFacts) Plan {
	s := f.Snapshot
	p := Plan{Reason: Deleting}
	if !slices.Contains(s.Finalizers, snapshotapi.AsSourceFinalizer) && !slices.Contains(s.Finalizers, snapshotapi.BoundFinalizer) &&
		!slices.Contains(s.Finalizers, snapshotapi.InGroupFinalizer) {
		p.Reason = InSync
		return p
	}
	content := f.Content
	if content != nil && !PointsBack(s, content) {
		content = nil
	}
	deleteContent := content != nil && content.Spec.DeletionPolicy == snapv1.VolumeSnapshotContentDelete
	if content != nil && Restoring(s, f.Claims) != "" {
		p.Reason = DeletePending
		p.Events = append(p.Events, warning("SnapshotDeletePending", "Snapshot is being used to restore a PVC"))
		p.Retry = fmt.Errorf("snapshot %s is in use (being used to restore a PVC), will retry deletion", key(s))
		return p
	}
	removeGroupFinalizer := false
	if group := GroupOf(s); group != "" {
		if f.GroupLive {
			msg := fmt.Sprintf("deletion of the individual volume snapshot %s is not allowed as it belongs to group snapshot %s. "+
				"Deleting the group snapshot will trigger the deletion of all the individual volume snapshots that are part of the group.",
				key(s), s.Namespace+"/"+group)
			p.Reason = DeletePending
			p.Events = append(p.Events, warning("SnapshotDeletePending", msg))
			p.Retry = errors.New(msg)
			return p
		}
		removeGroupFinalizer = true
	}
	if content != nil {
		p.MarkBeingDeleted = !hasAnnotation(content.Annotations, snapshotapi.BeingDeleted)
		p.DeleteContent = deleteContent && content.DeletionTimestamp == nil
	}
	remove := []string{snapshotapi.AsSourceFinalizer}
	if !deleteContent {
		remove = append(remove, snapshotapi.BoundFinalizer)
	}
	if removeGroupFinalizer {
		remove = append(remove, snapshotapi.InGroupFinalizer)
	}
	for _, fin := range remove {
		if slices.Contains(s.Finalizers, fin) {
			p.RemoveFinalizers = append(p.RemoveFinalizers, fin)
		}
	}
	return p
}

func hasAnnotation(a map[string]string, k string) bool {
	_, ok := a[k]
	return ok
}

// Restoring is the name of a Pending claim of the snapshot's namespace
// that restores from it (dataSource, or a dataSourceRef in the same
// namespace), "" if none.
func Restoring(s *snapv1.VolumeSnapshot, claims []*corev1.PersistentVolumeClaim) string {
	for _, c := range claims {
		if c == nil || c.Namespace != s.Namespace || c.Status.Phase != corev1.ClaimPending {
			continue
		}
		if d := c.Spec.DataSource; d != nil && d.Kind == snapshotapi.KindSnapshot && ptr.Deref(d.APIGroup, "") == snapshotapi.Group && d.Name == s.Name {
			return c.Name
		}
		if d := c.Spec.DataSourceRef; d != nil && d.Kind == snapshotapi.KindSnapshot && ptr.Deref(d.APIGroup, "") == snapshotapi.Group &&
			d.Name == s.Name && ptr.Deref(d.Namespace, c.Namespace) == c.Namespace {
			return c.Name
		}
	}
	return ""
}
