package grouping

import (
	"slices"
	"testing"

	vgsv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/internal/snapshotapi"
)

func preProvisioned(g *vgsv1.VolumeGroupSnapshot) {
	g.Spec.Source = vgsv1.VolumeGroupSnapshotSource{VolumeGroupSnapshotContentName: ptr("static")}
	g.Spec.VolumeGroupSnapshotClassName = nil
}

func staticContent(refNS, refName string, uid string) *vgsv1.VolumeGroupSnapshotContent {
	return &vgsv1.VolumeGroupSnapshotContent{
		ObjectMeta: metav1.ObjectMeta{Name: "static"},
		Spec: vgsv1.VolumeGroupSnapshotContentSpec{
			VolumeGroupSnapshotRef: v1.ObjectReference{Namespace: refNS, Name: refName, UID: typesUID(uid)},
			DeletionPolicy:         snapv1.VolumeSnapshotContentRetain, Driver: driver,
			Source: vgsv1.VolumeGroupSnapshotContentSource{GroupSnapshotHandles: &vgsv1.GroupSnapshotHandles{
				VolumeGroupSnapshotHandle: "gsh", VolumeSnapshotHandles: []string{"s0", "s1"}}},
		},
	}
}

func TestPreProvisioned(t *testing.T) {
	g := group(preProvisioned)
	f := facts(g)
	f.Content = staticContent(ns, "grp", "")
	steps := run(t, &f)
	if want := []Step{AddFinalizer, BindContent, UpdateStatus, Wait}; !slices.Equal(steps, want) {
		t.Fatalf("steps %v, want %v", steps, want)
	}
	if f.Content.Spec.VolumeGroupSnapshotRef.UID != g.UID || *g.Status.BoundVolumeGroupSnapshotContentName != "static" {
		t.Errorf("bound: %+v %+v", f.Content.Spec.VolumeGroupSnapshotRef, g.Status)
	}

	for name, tc := range map[string]struct {
		content *vgsv1.VolumeGroupSnapshotContent
		reason  string
	}{
		// A tenant naming a content meant for another namespace's group
		// of the same name never binds it.
		"content for another namespace": {staticContent("team-b", "grp", ""), "GroupSnapshotContentMisbound"},
		"content for another name":      {staticContent(ns, "other", ""), "GroupSnapshotContentMisbound"},
		"content bound to another UID":  {staticContent(ns, "grp", "someone"), "GroupSnapshotContentMisbound"},
		"dynamic content":               {content(g), "GroupSnapshotContentMismatch"},
		"missing":                       {nil, "GroupSnapshotContentMissing"},
	} {
		f := facts(group(preProvisioned))
		f.Content = tc.content
		p := DecideGroup(f)
		if p.Step != Fail || p.Events[0].Reason != tc.reason {
			t.Errorf("%s: %+v, want Fail %s", name, p, tc.reason)
		}
	}
}

// deleting is a ready dynamic group with two members, being deleted.
func deleting(policy snapv1.DeletionPolicy) GroupFacts {
	g := group(bound)
	g.DeletionTimestamp = &metav1.Time{Time: now}
	g.Status = &vgsv1.VolumeGroupSnapshotStatus{BoundVolumeGroupSnapshotContentName: ptr(snapshotapi.GroupContentName(g.UID)), ReadyToUse: ptr(true)}
	f := facts(g)
	f.Content = content(g, answered(true), func(c *vgsv1.VolumeGroupSnapshotContent) { c.Spec.DeletionPolicy = policy })
	for _, h := range []string{"vol-team-a-db-0", "vol-team-a-db-1"} {
		n := MemberSnapshotName(g.UID, h)
		f.Snapshots[n] = &snapv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Name: n, Namespace: ns, UID: typesUID("u" + n),
			OwnerReferences: []metav1.OwnerReference{OwnerReference(g)}, Finalizers: []string{snapshotapi.InGroupFinalizer}}}
	}
	// A tenant's snapshot naming the group without its UID is no member.
	f.Snapshots["mine"] = &snapv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Name: "mine", Namespace: ns,
		OwnerReferences: []metav1.OwnerReference{{APIVersion: GroupAPIVersion, Kind: GroupKind, Name: "grp", UID: "forged"}}}}
	return f
}

func TestDeletion(t *testing.T) {
	f := deleting(snapv1.VolumeSnapshotContentDelete)
	steps := run(t, &f)
	if want := []Step{MarkContent, DeleteContent, DeleteMember, DeleteMember, Wait}; !slices.Equal(steps, want) {
		t.Fatalf("Delete: steps %v, want %v", steps, want)
	}
	if f.Snapshots["mine"].DeletionTimestamp != nil {
		t.Errorf("a snapshot with a forged owner was deleted")
	}
	if f.Content.Annotations[snapshotapi.GroupBeingDeleted] != "yes" {
		t.Errorf("content not marked: %v", f.Content.Annotations)
	}
	// The sidecar deleted the group snapshot and the content is gone.
	f.Content = nil
	if p := DecideGroup(f); p.Step != RemoveFinalizer {
		t.Errorf("content gone: %s", p.Step)
	}

	f = deleting(snapv1.VolumeSnapshotContentRetain)
	if steps := run(t, &f); !slices.Equal(steps, []Step{MarkContent, DeleteMember, DeleteMember, RemoveFinalizer}) {
		t.Errorf("Retain: steps %v", steps)
	}
	if f.Content.DeletionTimestamp != nil {
		t.Errorf("Retain: content deleted")
	}

	// A member being restored holds the whole group.
	f = deleting(snapv1.VolumeSnapshotContentDelete)
	member := MemberSnapshotName(f.Group.UID, "vol-team-a-db-1")
	f.Claims = append(f.Claims, &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "restore", Namespace: ns},
		Spec:   v1.PersistentVolumeClaimSpec{DataSource: &v1.TypedLocalObjectReference{APIGroup: ptr(snapshotapi.Group), Kind: snapshotapi.KindSnapshot, Name: member}},
		Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimPending}})
	p := DecideGroup(f)
	if p.Step != Wait || p.Err == nil || len(p.Events) != 1 || p.Events[0].Reason != "SnapshotDeletePending" {
		t.Errorf("restoring: %+v", p)
	}

	// Deleted before its status named the content: found by its fixed name.
	f = deleting(snapv1.VolumeSnapshotContentDelete)
	f.Group.Status = nil
	if p := DecideGroup(f); p.Step != MarkContent {
		t.Errorf("no status: %s", p.Step)
	}

	// A content still without its finalizer (created before contents
	// were born with it, or pre-provisioned without it) gets it before
	// its delete, or the delete would pass the sidecar and leave the
	// backend group snapshot behind.
	f = deleting(snapv1.VolumeSnapshotContentDelete)
	f.Content.Finalizers = nil
	steps = run(t, &f)
	if want := []Step{MarkContent, AddContentFinalizer, DeleteContent, DeleteMember, DeleteMember, Wait}; !slices.Equal(steps, want) {
		t.Fatalf("content without its finalizer: steps %v, want %v", steps, want)
	}
	if !slices.Contains(f.Content.Finalizers, snapshotapi.GroupContentFinalizer) {
		t.Errorf("content deleted without its finalizer: %v", f.Content.Finalizers)
	}

	// Without its finalizer there is nothing left to do.
	f = deleting(snapv1.VolumeSnapshotContentDelete)
	f.Group.Finalizers = nil
	if p := DecideGroup(f); p.Step != Wait || p.Err != nil {
		t.Errorf("no finalizer: %+v", p)
	}
}

func TestDecideGroupContent(t *testing.T) {
	g := group()
	c := content(g, func(c *vgsv1.VolumeGroupSnapshotContent) { c.Finalizers = nil })
	if p := DecideGroupContent(c); p.Step != AddContentFinalizer {
		t.Errorf("bound: %s", p.Step)
	}
	c.Spec.VolumeGroupSnapshotRef.UID = ""
	if p := DecideGroupContent(c); p.Step != Wait || p.Err != nil {
		t.Errorf("unbound: %+v", p)
	}
	c.Spec.Source.GroupSnapshotHandles = &vgsv1.GroupSnapshotHandles{VolumeGroupSnapshotHandle: "x"}
	if p := DecideGroupContent(c); p.Err == nil || p.Events[0].Reason != "GroupContentValidationError" {
		t.Errorf("both sources: %+v", p)
	}
}

// The content of a group deleted past its finalizer: its finalizer, the
// mark, the delete, under Delete only, and only the dynamic content named
// after the group.
func TestDecideBypassedContent(t *testing.T) {
	g := group()
	c := content(g, func(c *vgsv1.VolumeGroupSnapshotContent) { c.Finalizers = nil })
	var steps []Step
	for range 4 {
		p, ok := DecideBypassedContent(c)
		if !ok {
			t.Fatalf("not taken: %+v", c)
		}
		steps = append(steps, p.Step)
		switch p.Step {
		case AddContentFinalizer, MarkContent:
			c = p.Content
		case DeleteContent:
			c.DeletionTimestamp = &metav1.Time{}
		}
	}
	if want := []Step{AddContentFinalizer, MarkContent, DeleteContent, Wait}; !slices.Equal(steps, want) {
		t.Errorf("steps %v, want %v", steps, want)
	}
	for name, other := range map[string]*vgsv1.VolumeGroupSnapshotContent{
		"Retain":          content(g, func(c *vgsv1.VolumeGroupSnapshotContent) { c.Spec.DeletionPolicy = snapv1.VolumeSnapshotContentRetain }),
		"another name":    content(g, func(c *vgsv1.VolumeGroupSnapshotContent) { c.Name = "copied" }),
		"pre-provisioned": staticContent(g.Namespace, g.Name, string(g.UID)),
	} {
		if p, ok := DecideBypassedContent(other); ok {
			t.Errorf("%s: taken (%s)", name, p.Step)
		}
	}
	gone := g.DeepCopy()
	gone.Finalizers = []string{snapshotapi.GroupBoundFinalizer}
	if !GroupSkippedFinalizer(gone) {
		t.Errorf("a group gone with its finalizer and no deletion timestamp: not told")
	}
	gone.DeletionTimestamp = &metav1.Time{}
	if GroupSkippedFinalizer(gone) || GroupSkippedFinalizer(g) {
		t.Errorf("an ordinary deletion told as skipping the finalizer")
	}
}
