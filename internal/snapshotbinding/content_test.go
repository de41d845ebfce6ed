package snapshotbinding

import (
	"slices"
	"testing"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/snapshotapi"
)

func TestDecideContent(t *testing.T) {
	s := dyn("snap", withClass("snaps"), boundTo("snapcontent-uid-snap", false), withFinalizers(snapshotapi.AsSourceFinalizer))
	protected := func(c *snapv1.VolumeSnapshotContent) *snapv1.VolumeSnapshotContent {
		c.Finalizers = []string{snapshotapi.ContentFinalizer}
		return c
	}
	gone := s.DeepCopy()
	deleting(gone)
	recreated := s.DeepCopy()
	recreated.UID = "uid-new"
	deleting(recreated)
	invalid := dynContent(s)
	invalid.Spec.Source.SnapshotHandle = ptr.To("h")
	member := func(policy snapv1.DeletionPolicy) *snapv1.VolumeSnapshotContent {
		c := protected(dynContent(s))
		c.Annotations = map[string]string{snapshotapi.GroupHandleAnnotation: "group-1"}
		c.Spec.DeletionPolicy = policy
		return c
	}
	for _, tc := range []struct {
		name     string
		content  *snapv1.VolumeSnapshotContent
		snapshot *snapv1.VolumeSnapshot
		want     ContentPlan
	}{
		{"both handles", invalid, s, ContentPlan{Reason: ContentInvalid, Events: []Event{{Warning, "ContentValidationError", "Exactly one of VolumeHandle and SnapshotHandle should be specified"}}}},
		{"pre-bound, no uid: left to the snapshot", preContent("c", ns, "snap", ""), nil, ContentPlan{Reason: ContentPreBound}},
		{"bound: protected", dynContent(s), s, ContentPlan{Reason: ContentProtect, AddFinalizer: true}},
		{"snapshot gone: never deleted", protected(dynContent(s)), nil, ContentPlan{Reason: ContentSnapGone}},
		{"member gone under Delete: deleted (the group holds its data)", member(snapv1.VolumeSnapshotContentDelete), nil,
			ContentPlan{Reason: ContentMemberOrphaned, MarkBeingDeleted: true, Delete: true}},
		{"member gone under Retain: kept", member(snapv1.VolumeSnapshotContentRetain), nil, ContentPlan{Reason: ContentSnapGone}},
		{"member recreated under the name under Delete: deleted", member(snapv1.VolumeSnapshotContentDelete), recreated,
			ContentPlan{Reason: ContentMemberOrphaned, MarkBeingDeleted: true, Delete: true}},
		{"snapshot recreated under the name: never touched", protected(dynContent(s)), recreated, ContentPlan{Reason: ContentSnapNewer}},
		{"snapshot being deleted: annotated", protected(dynContent(s)), gone, ContentPlan{Reason: ContentRelease, MarkBeingDeleted: true}},
		{"status lags: snapshot requeued", protected(withStatus(dynContent(s), true, 1, 1)), s, ContentPlan{Reason: ContentInSync, RequeueSnapshot: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := DecideContent(ContentFacts{Content: tc.content, Snapshot: tc.snapshot})
			if got.Reason != tc.want.Reason || got.AddFinalizer != tc.want.AddFinalizer || got.MarkBeingDeleted != tc.want.MarkBeingDeleted ||
				got.Delete != tc.want.Delete || got.RequeueSnapshot != tc.want.RequeueSnapshot || !slices.Equal(got.Events, tc.want.Events) {
				t.Errorf("DecideContent = %+v, want %+v", got, tc.want)
			}
		})
	}
}

// A dynamic content whose snapshot was seen deleted past its finalizers
// is deleted under Delete, as the snapshot's deletion would have; under
// Retain, or a content not made for that snapshot, it is kept.
func TestDecideContentSnapshotBypassed(t *testing.T) {
	s := dyn("snap", withClass("snaps"))
	retain := dynContent(s)
	retain.Spec.DeletionPolicy = snapv1.VolumeSnapshotContentRetain
	renamed := dynContent(s)
	renamed.Name = "copied-from-elsewhere"
	pre := preContent("pre", ns, "snap", s.UID)
	recreated := s.DeepCopy()
	recreated.UID = "uid-new"
	for _, tc := range []struct {
		name     string
		content  *snapv1.VolumeSnapshotContent
		snapshot *snapv1.VolumeSnapshot
		want     ContentPlan
	}{
		{"gone under Delete: deleted", dynContent(s), nil, ContentPlan{Reason: ContentSnapshotBypassed, AddFinalizer: true, MarkBeingDeleted: true, Delete: true}},
		{"recreated under the name: deleted", dynContent(s), recreated, ContentPlan{Reason: ContentSnapshotBypassed, AddFinalizer: true, MarkBeingDeleted: true, Delete: true}},
		{"under Retain: kept", retain, nil, ContentPlan{Reason: ContentProtect, AddFinalizer: true}},
		{"not named after it: kept", renamed, nil, ContentPlan{Reason: ContentProtect, AddFinalizer: true}},
		{"pre-provisioned: kept", pre, nil, ContentPlan{Reason: ContentProtect, AddFinalizer: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := DecideContent(ContentFacts{Content: tc.content, Snapshot: tc.snapshot, SnapshotBypassed: true})
			if got.Reason != tc.want.Reason || got.AddFinalizer != tc.want.AddFinalizer || got.MarkBeingDeleted != tc.want.MarkBeingDeleted ||
				got.Delete != tc.want.Delete {
				t.Errorf("DecideContent = %+v, want %+v", got, tc.want)
			}
		})
	}
	deleted := s.DeepCopy()
	deleted.Finalizers = []string{snapshotapi.AsSourceFinalizer}
	if !SkippedFinalizers(deleted) {
		t.Errorf("a snapshot gone with a finalizer and no deletion timestamp: not told")
	}
	deleted.DeletionTimestamp = &metav1.Time{}
	if SkippedFinalizers(deleted) || SkippedFinalizers(s) {
		t.Errorf("an ordinary deletion told as skipping finalizers")
	}
}
