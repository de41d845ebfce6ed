package explain_test

import (
	"bytes"
	"strings"
	"testing"

	vgsv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/explain"
	"github.com/volplane/volplane/internal/grouping"
	"github.com/volplane/volplane/internal/snapshotapi"
)

type vgsOpt func(*vgsv1.VolumeGroupSnapshot)

// newGroup is a group ns/g selecting app=db, of class "group", with its
// finalizer.
func newGroup(opts ...vgsOpt) *vgsv1.VolumeGroupSnapshot {
	g := &vgsv1.VolumeGroupSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "g", UID: "uid-g",
		Finalizers: []string{snapshotapi.GroupBoundFinalizer}}}
	g.Spec.Source.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}
	g.Spec.VolumeGroupSnapshotClassName = ptr.To("group")
	for _, o := range opts {
		o(g)
	}
	return g
}

// groupContent is the dynamic content of ns/g with both volumes, no status.
func groupContent(opts ...func(*vgsv1.VolumeGroupSnapshotContent)) *vgsv1.VolumeGroupSnapshotContent {
	c := &vgsv1.VolumeGroupSnapshotContent{ObjectMeta: metav1.ObjectMeta{Name: snapshotapi.GroupContentName("uid-g"),
		Finalizers: []string{snapshotapi.GroupContentFinalizer}}}
	c.Spec.Driver, c.Spec.DeletionPolicy = snapDriver, snapv1.VolumeSnapshotContentDelete
	c.Spec.VolumeGroupSnapshotClassName = ptr.To("group")
	c.Spec.VolumeGroupSnapshotRef = v1.ObjectReference{Kind: "VolumeGroupSnapshot", Namespace: "ns", Name: "g", UID: "uid-g"}
	c.Spec.Source.VolumeHandles = []string{"vol-a", "vol-b"}
	for _, o := range opts {
		o(c)
	}
	return c
}

// taken gives the content the driver's answer for both volumes.
func taken(ready bool) func(*vgsv1.VolumeGroupSnapshotContent) {
	return func(c *vgsv1.VolumeGroupSnapshotContent) {
		c.Status = &vgsv1.VolumeGroupSnapshotContentStatus{VolumeGroupSnapshotHandle: ptr.To("gh-1"), ReadyToUse: ptr.To(ready),
			VolumeSnapshotInfoList: []vgsv1.VolumeSnapshotInfo{
				{VolumeHandle: "vol-a", SnapshotHandle: "sh-a", ReadyToUse: ptr.To(ready)},
				{VolumeHandle: "vol-b", SnapshotHandle: "sh-b", ReadyToUse: ptr.To(ready)}}}
	}
}

// member is the member snapshot of the group for volume handle, of claim,
// bound to its content, ready.
func member(handle, claim string) *snapv1.VolumeSnapshot {
	g := newGroup()
	vs := &snapv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: grouping.MemberSnapshotName(g.UID, handle), UID: types.UID("uid-m-" + handle),
		OwnerReferences: []metav1.OwnerReference{grouping.OwnerReference(g)}, Finalizers: []string{snapshotapi.InGroupFinalizer}}}
	vs.Spec.Source.PersistentVolumeClaimName = ptr.To(claim)
	vs.Status = &snapv1.VolumeSnapshotStatus{BoundVolumeSnapshotContentName: ptr.To(grouping.MemberContentName(g.UID, handle)),
		VolumeGroupSnapshotName: ptr.To("g"), ReadyToUse: ptr.To(true)}
	return vs
}

// memberContent is the content the group loop makes for member vs.
func memberContent(vs *snapv1.VolumeSnapshot) *snapv1.VolumeSnapshotContent {
	handle := "vol-a"
	if vs.Spec.Source.PersistentVolumeClaimName != nil && *vs.Spec.Source.PersistentVolumeClaimName == "db-b" {
		handle = "vol-b"
	}
	c := &snapv1.VolumeSnapshotContent{ObjectMeta: metav1.ObjectMeta{Name: *vs.Status.BoundVolumeSnapshotContentName,
		Annotations: map[string]string{snapshotapi.GroupHandleAnnotation: "gh-1"}}}
	c.Spec.Driver, c.Spec.DeletionPolicy, c.Spec.Source.VolumeHandle = snapDriver, snapv1.VolumeSnapshotContentDelete, ptr.To(handle)
	c.Spec.VolumeSnapshotRef = v1.ObjectReference{Namespace: vs.Namespace, Name: vs.Name, UID: vs.UID}
	c.Status = &snapv1.VolumeSnapshotContentStatus{SnapshotHandle: ptr.To("sh-" + handle[4:]), ReadyToUse: ptr.To(true)}
	return c
}

func labelled(c *v1.PersistentVolumeClaim) { c.Labels = map[string]string{"app": "db"} }

// groupWorld has claims db-a and db-b (app=db) bound to CSI volumes vol-a
// and vol-b of snapDriver, an unlabelled claim, a claim app=db of another
// namespace, and the default group class "group" of snapDriver.
func groupWorld() *explain.Facts {
	f := facts()
	pa, pb := newPV("pv-a", "1Gi", pvCSI(snapDriver, "vol-a")), newPV("pv-b", "1Gi", pvCSI(snapDriver, "vol-b"))
	po := newPV("pv-o", "1Gi", pvCSI(snapDriver, "vol-o"))
	other := newClaim("thief", "1Gi", labelled, claimBoundTo(po))
	other.Namespace, po.Spec.ClaimRef.Namespace = "other", "other"
	f.Claims = []*v1.PersistentVolumeClaim{newClaim("db-a", "1Gi", labelled, claimBoundTo(pa)), newClaim("db-b", "1Gi", labelled, claimBoundTo(pb)),
		newClaim("web", "1Gi"), other}
	f.Volumes = []*v1.PersistentVolume{pa, pb, po}
	f.GroupClasses = []*vgsv1.VolumeGroupSnapshotClass{{ObjectMeta: metav1.ObjectMeta{Name: "group",
		Annotations: map[string]string{snapshotapi.DefaultGroupClassAnnotation: "true"}}, Driver: snapDriver, DeletionPolicy: snapv1.VolumeSnapshotContentDelete}}
	return f
}

func TestGroupSummarySaysWhatTheGroupLoopDoesNext(t *testing.T) {
	for _, tc := range []struct {
		name   string
		g      *vgsv1.VolumeGroupSnapshot
		change func(*explain.Facts)
		want   string
	}{
		{"default class", newGroup(func(g *vgsv1.VolumeGroupSnapshot) { g.Spec.VolumeGroupSnapshotClassName = nil }), nil,
			"gives it its driver's default class group at its next sync"},
		{"no default class", newGroup(func(g *vgsv1.VolumeGroupSnapshot) { g.Spec.VolumeGroupSnapshotClassName = nil }),
			func(f *explain.Facts) { f.GroupClasses[0].Annotations = nil },
			"Not ready: Failed to set default group snapshot class with error cannot find default group snapshot class (SetDefaultGroupSnapshotClassFailed)."},
		{"class missing", newGroup(func(g *vgsv1.VolumeGroupSnapshot) { g.Spec.VolumeGroupSnapshotClassName = ptr.To("nope") }), nil,
			`"nope" not found (GetGroupSnapshotClassFailed)`},
		{"content to create", newGroup(), nil,
			"Not ready: waiting for the group snapshot loop to create its content groupsnapcontent-uid-g (is it running?)."},
		{"a claim not bound", newGroup(), func(f *explain.Facts) { f.Claims[1] = newClaim("db-b", "1Gi", labelled) },
			"the PVC db-b is not yet bound to a PV"},
		{"no claim matches", newGroup(func(g *vgsv1.VolumeGroupSnapshot) {
			g.Spec.Source.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "nothing"}}
		}), nil, "not applied to any PVC"},
		{"both sources", newGroup(func(g *vgsv1.VolumeGroupSnapshot) { g.Spec.Source.VolumeGroupSnapshotContentName = ptr.To("c") }), nil,
			"Exactly one of Selector and VolumeGroupSnapshotContentName should be specified (GroupSnapshotValidationError)."},
		{"finalizer to add", newGroup(func(g *vgsv1.VolumeGroupSnapshot) { g.Finalizers = nil }), func(f *explain.Facts) {
			f.GroupContents = []*vgsv1.VolumeGroupSnapshotContent{groupContent()}
		}, "adds its finalizer at its next sync"},
		{"waiting for the snapshotter", newGroup(), func(f *explain.Facts) {
			f.GroupContents = []*vgsv1.VolumeGroupSnapshotContent{groupContent()}
		}, "Not ready: waiting for the snapshotter to take it (CreateVolumeGroupSnapshot): no snapshotter serving driver csi.example.com has reported."},
		{"content misbound", newGroup(), func(f *explain.Facts) {
			f.GroupContents = []*vgsv1.VolumeGroupSnapshotContent{groupContent(func(c *vgsv1.VolumeGroupSnapshotContent) { c.Spec.VolumeGroupSnapshotRef.UID = "other" })}
		}, "is bound to a different group snapshot (GroupSnapshotContentMisbound)."},
		{"members to make", newGroup(), func(f *explain.Facts) {
			f.GroupContents = []*vgsv1.VolumeGroupSnapshotContent{groupContent(taken(true))}
		}, "driver csi.example.com has taken group snapshot gh-1; waiting for the group snapshot loop to make its members (0 of 2 made)."},
		{"pre-provisioned content missing", newGroup(func(g *vgsv1.VolumeGroupSnapshot) {
			g.Spec.Source = vgsv1.VolumeGroupSnapshotSource{VolumeGroupSnapshotContentName: ptr.To("pre")}
		}), nil, "VolumeGroupSnapshotContent is missing (GroupSnapshotContentMissing)."},
		{"ready", newGroup(func(g *vgsv1.VolumeGroupSnapshot) {
			g.Status = &vgsv1.VolumeGroupSnapshotStatus{BoundVolumeGroupSnapshotContentName: ptr.To(snapshotapi.GroupContentName("uid-g")), ReadyToUse: ptr.To(true)}
		}), func(f *explain.Facts) {
			f.GroupContents = []*vgsv1.VolumeGroupSnapshotContent{groupContent(taken(true))}
			f.VolumeSnapshots = []*snapv1.VolumeSnapshot{member("vol-a", "db-a"), member("vol-b", "db-b")}
			for _, m := range f.VolumeSnapshots {
				f.Contents = append(f.Contents, memberContent(m))
			}
		}, "Ready: group snapshot gh-1 of csi.example.com, 2 members."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := groupWorld()
			if tc.change != nil {
				tc.change(f)
			}
			r := explain.Group(tc.g, f)
			if !strings.Contains(r.Summary, tc.want) {
				t.Errorf("summary %q, want %q", r.Summary, tc.want)
			}
			var b bytes.Buffer
			if err := r.Table(&b); err != nil {
				t.Fatal(err)
			}
			for i, line := range strings.Split(b.String(), "\n") {
				if len([]rune(line)) > explain.Width {
					t.Errorf("line %d is %d columns: %q", i+1, len([]rune(line)), line)
				}
			}
		})
	}
}

// The claims a group's report lists are those of its own namespace its
// selector matches: a claim of another namespace with the same labels is
// never listed, whatever it names.
func TestGroupClaimsAreItsOwnNamespacesOnly(t *testing.T) {
	f := groupWorld()
	f.Claims[1] = newClaim("db-b", "1Gi", labelled)
	r := explain.Group(newGroup(), f)
	var names []string
	for _, c := range r.Claims {
		names = append(names, c.Name+":"+c.Problem)
	}
	want := "db-a: db-b:the PVC db-b is not yet bound to a PV, will not attempt to take a group snapshot"
	if got := strings.Join(names, " "); got != want {
		t.Errorf("claims %q, want %q", got, want)
	}
	if r.Class == nil || r.Class.Name != "group" || r.Class.Driver != snapDriver {
		t.Errorf("class %+v", r.Class)
	}
}

func TestGroupDeletionSaysWhatHoldsIt(t *testing.T) {
	deleting := func(g *vgsv1.VolumeGroupSnapshot) { g.DeletionTimestamp = ptr.To(metav1.NewTime(now)) }
	withMembers := func(f *explain.Facts) {
		f.GroupContents = []*vgsv1.VolumeGroupSnapshotContent{groupContent(taken(true))}
		f.VolumeSnapshots = []*snapv1.VolumeSnapshot{member("vol-a", "db-a"), member("vol-b", "db-b")}
	}
	for _, tc := range []struct {
		name   string
		change func(*explain.Facts)
		want   string
		heldBy string
	}{
		{"a member restored by a Pending claim", func(f *explain.Facts) {
			withMembers(f)
			f.Claims = append(f.Claims, newClaim("restore", "1Gi", fromSnapshot(f.VolumeSnapshots[0].Name)))
		}, "being used to restore a PVC (SnapshotDeletePending)", "pvc/ns/restore"},
		{"content to mark", withMembers, "marks its content groupsnapcontent-uid-g as being deleted", ""},
		{"content to delete", func(f *explain.Facts) {
			withMembers(f)
			f.GroupContents[0].Annotations = map[string]string{snapshotapi.GroupBeingDeleted: "yes"}
		}, "deletes its content groupsnapcontent-uid-g (Delete)", "volumegroupsnapshotcontent/groupsnapcontent-uid-g"},
		{"waiting for the driver", func(f *explain.Facts) {
			withMembers(f)
			c := f.GroupContents[0]
			c.Annotations = map[string]string{snapshotapi.GroupBeingDeleted: "yes"}
			c.DeletionTimestamp = ptr.To(metav1.NewTime(now))
			for _, m := range f.VolumeSnapshots {
				m.DeletionTimestamp = ptr.To(metav1.NewTime(now))
			}
		}, "it waits for its content groupsnapcontent-uid-g (Delete): the snapshotter of csi.example.com must delete group snapshot gh-1", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := groupWorld()
			tc.change(f)
			r := explain.Group(newGroup(deleting), f)
			if r.Deletion == nil || !strings.Contains(r.Summary, tc.want) {
				t.Fatalf("summary %q, want %q", r.Summary, tc.want)
			}
			if tc.heldBy != "" && !strings.Contains(strings.Join(r.Deletion.HeldBy, " "), tc.heldBy) {
				t.Errorf("held by %v, want %s", r.Deletion.HeldBy, tc.heldBy)
			}
		})
	}
}

func TestGroupContentReport(t *testing.T) {
	f := groupWorld()
	f.GroupSnapshots = []*vgsv1.VolumeGroupSnapshot{newGroup()}
	f.VolumeSnapshots = []*snapv1.VolumeSnapshot{member("vol-a", "db-a"), member("vol-b", "db-b")}
	r := explain.GroupContent(groupContent(taken(true)), f)
	if r.Summary != "Ready: group snapshot gh-1 of csi.example.com, bound to ns/g, 2 members." || r.GroupState != "Bound" || len(r.Members) != 2 || !r.Members[0].Ready {
		t.Errorf("report %+v", r)
	}
	var b bytes.Buffer
	if err := r.Table(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Group:         ns/g (Bound)", "Members:\n", "\n    ready, of pvc db-a, backend sh-a\n    snapcontent-", "volumegroupsnapshotcontent-bound-protection"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("no %q in\n%s", want, b.String())
		}
	}
	f.GroupSnapshots = nil
	if r := explain.GroupContent(groupContent(taken(true)), f); !strings.Contains(r.Summary, "is gone, yet nothing deletes it (policy Delete)") {
		t.Errorf("summary %q", r.Summary)
	}
}

// Hostile fields: a pre-provisioned group naming another tenant's content
// is misbound and gets none of its members; a snapshot naming the group
// as its owner without its UID is no member; a claim of another namespace
// is never one of its claims.
func TestGroupReportTrustsNoTenantField(t *testing.T) {
	f := groupWorld()
	theirs := groupContent(taken(true), func(c *vgsv1.VolumeGroupSnapshotContent) {
		c.Name = "theirs"
		c.Spec.Source = vgsv1.VolumeGroupSnapshotContentSource{GroupSnapshotHandles: &vgsv1.GroupSnapshotHandles{VolumeGroupSnapshotHandle: "gh-1"}}
		c.Spec.VolumeGroupSnapshotRef = v1.ObjectReference{Namespace: "other", Name: "g", UID: "uid-theirs"}
	})
	f.GroupContents = []*vgsv1.VolumeGroupSnapshotContent{theirs}
	g := newGroup(func(g *vgsv1.VolumeGroupSnapshot) {
		g.Spec.Source = vgsv1.VolumeGroupSnapshotSource{VolumeGroupSnapshotContentName: ptr.To("theirs")}
	})
	r := explain.Group(g, f)
	if !strings.Contains(r.Summary, "is bound to a different group snapshot (GroupSnapshotContentMisbound)") || len(r.Members) != 0 || len(r.Claims) != 0 {
		t.Errorf("group naming another's content: %q, members %+v, claims %+v", r.Summary, r.Members, r.Claims)
	}

	f = groupWorld()
	fake := member("vol-a", "db-a")
	fake.OwnerReferences[0].UID = "not-the-group"
	f.VolumeSnapshots = []*snapv1.VolumeSnapshot{fake}
	if r := explain.Group(newGroup(), f); len(r.Members) != 0 {
		t.Errorf("a snapshot owned by name only is listed as a member: %+v", r.Members)
	}
}
