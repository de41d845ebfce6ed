package snapshotbinding

import (
	"slices"
	"strings"
	"testing"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/snapshotapi"
)

func deletingSnapshot(opts ...func(*snapv1.VolumeSnapshot)) *snapv1.VolumeSnapshot {
	all := append([]func(*snapv1.VolumeSnapshot){withClass("snaps"), boundTo("snapcontent-uid-snap", true),
		withFinalizers(snapshotapi.AsSourceFinalizer, snapshotapi.BoundFinalizer), deleting}, opts...)
	return dyn("snap", all...)
}

func restoringClaim(namespace, phase string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "restored"},
		Spec: corev1.PersistentVolumeClaimSpec{DataSource: &corev1.TypedLocalObjectReference{
			APIGroup: ptr.To(snapshotapi.Group), Kind: snapshotapi.KindSnapshot, Name: "snap"}},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.PersistentVolumeClaimPhase(phase)}}
}

func TestDeletion(t *testing.T) {
	for _, tc := range []struct {
		name            string
		snapshot        *snapv1.VolumeSnapshot
		content         func(*snapv1.VolumeSnapshot) *snapv1.VolumeSnapshotContent
		claims          []*corev1.PersistentVolumeClaim
		groupLive       bool
		mark, del       bool
		remove          []string
		event, contains string
	}{
		{name: "Delete: content annotated and deleted, bound finalizer kept",
			snapshot: deletingSnapshot(), content: dynContent, mark: true, del: true, remove: []string{snapshotapi.AsSourceFinalizer}},
		{name: "content gone: every finalizer goes", snapshot: deletingSnapshot(),
			content: func(*snapv1.VolumeSnapshot) *snapv1.VolumeSnapshotContent { return nil },
			remove:  []string{snapshotapi.AsSourceFinalizer, snapshotapi.BoundFinalizer}},
		{name: "Retain: annotated, not deleted", snapshot: deletingSnapshot(), content: func(s *snapv1.VolumeSnapshot) *snapv1.VolumeSnapshotContent {
			c := dynContent(s)
			c.Spec.DeletionPolicy = snapv1.VolumeSnapshotContentRetain
			return c
		}, mark: true, remove: []string{snapshotapi.AsSourceFinalizer, snapshotapi.BoundFinalizer}},
		{name: "a content pointing elsewhere is left alone", snapshot: deletingSnapshot(), content: func(s *snapv1.VolumeSnapshot) *snapv1.VolumeSnapshotContent {
			c := dynContent(s)
			c.Spec.VolumeSnapshotRef.UID = "other"
			return c
		}, remove: []string{snapshotapi.AsSourceFinalizer, snapshotapi.BoundFinalizer}},
		{name: "a Pending claim restores from it: kept", snapshot: deletingSnapshot(), content: dynContent,
			claims: []*corev1.PersistentVolumeClaim{restoringClaim(ns, "Pending")},
			event:  "SnapshotDeletePending", contains: "Snapshot is being used to restore a PVC"},
		{name: "a Bound claim restored from it: deleted", snapshot: deletingSnapshot(), content: dynContent,
			claims: []*corev1.PersistentVolumeClaim{restoringClaim(ns, "Bound")}, mark: true, del: true, remove: []string{snapshotapi.AsSourceFinalizer}},
		{name: "a Pending claim of another namespace does not hold it", snapshot: deletingSnapshot(), content: dynContent,
			claims: []*corev1.PersistentVolumeClaim{restoringClaim("team-b", "Pending")}, mark: true, del: true, remove: []string{snapshotapi.AsSourceFinalizer}},
		{name: "member of a live group: refused", snapshot: deletingSnapshot(func(s *snapv1.VolumeSnapshot) {
			s.Status.VolumeGroupSnapshotName = ptr.To("group")
			s.Finalizers = append(s.Finalizers, snapshotapi.InGroupFinalizer)
		}), content: dynContent, groupLive: true, event: "SnapshotDeletePending",
			contains: "deletion of the individual volume snapshot team-a/snap is not allowed as it belongs to group snapshot team-a/group."},
		{name: "member of a group gone: deleted, in-group finalizer removed", snapshot: deletingSnapshot(func(s *snapv1.VolumeSnapshot) {
			s.Status.VolumeGroupSnapshotName = ptr.To("group")
			s.Finalizers = append(s.Finalizers, snapshotapi.InGroupFinalizer)
		}), content: dynContent, mark: true, del: true, remove: []string{snapshotapi.AsSourceFinalizer, snapshotapi.InGroupFinalizer}},
		// A member deleted with its group before this loop gave it its
		// own finalizers carries only the group's.
		{name: "member with only the in-group finalizer, group gone: content deleted, finalizer removed", snapshot: deletingSnapshot(func(s *snapv1.VolumeSnapshot) {
			s.Status.VolumeGroupSnapshotName = ptr.To("group")
			s.Finalizers = []string{snapshotapi.InGroupFinalizer}
		}), content: dynContent, mark: true, del: true, remove: []string{snapshotapi.InGroupFinalizer}},
		{name: "member with only the in-group finalizer, group live: refused", snapshot: deletingSnapshot(func(s *snapv1.VolumeSnapshot) {
			s.Status.VolumeGroupSnapshotName = ptr.To("group")
			s.Finalizers = []string{snapshotapi.InGroupFinalizer}
		}), content: dynContent, groupLive: true, event: "SnapshotDeletePending",
			contains: "deletion of the individual volume snapshot team-a/snap is not allowed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := facts(tc.snapshot, tc.content(tc.snapshot))
			f.Claims, f.GroupLive = tc.claims, tc.groupLive
			p := DecideSnapshot(f)
			if p.MarkBeingDeleted != tc.mark || p.DeleteContent != tc.del || !slices.Equal(p.RemoveFinalizers, tc.remove) {
				t.Errorf("plan %+v: want mark %v delete %v remove %v", p, tc.mark, tc.del, tc.remove)
			}
			if tc.event != "" {
				if p.Retry == nil || !slices.Equal(reasons(p.Events), []string{tc.event}) || !strings.Contains(p.Events[0].Message, tc.contains) {
					t.Errorf("events %+v retry %v, want %s %q", p.Events, p.Retry, tc.event, tc.contains)
				}
			} else if p.Retry != nil || len(p.Events) != 0 {
				t.Errorf("retry %v events %v", p.Retry, p.Events)
			}
		})
	}
}

// Deleting needs no class: a snapshot whose class is gone is still deleted.
func TestDeletionWithoutClass(t *testing.T) {
	s := deletingSnapshot(withClass("gone"))
	p := DecideSnapshot(facts(s, nil))
	if !slices.Equal(p.RemoveFinalizers, []string{snapshotapi.AsSourceFinalizer, snapshotapi.BoundFinalizer}) || p.Retry != nil {
		t.Errorf("plan %+v", p)
	}
}

// Another snapshot holds its claim: a deleted one releases it only when no
// other snapshot of the claim is still being made.
func TestDeletionReleasesTheClaimUnlessASiblingHoldsIt(t *testing.T) {
	s := deletingSnapshot()
	f := facts(s, nil)
	f.Claim.Finalizers = []string{snapshotapi.ClaimFinalizer}
	if p := DecideSnapshot(f); p.Claim != ClaimRemoveFinalizer {
		t.Errorf("claim step %v, want released", p.Claim)
	}
	sib := dyn("sib", withClass("snaps"), boundTo("snapcontent-uid-sib", false))
	f.Siblings = []Sibling{{Snapshot: sib, Content: dynContent(sib)}}
	if p := DecideSnapshot(f); p.Claim != ClaimKeep {
		t.Errorf("claim step %v, want kept while sib is being made", p.Claim)
	}
}
