package grouping

import (
	"slices"
	"strings"
	"testing"

	vgsv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/volplane/volplane/internal/snapshotapi"
)

// run applies DecideGroup's steps to an in-memory world until it waits or
// fails, as the loop does to the API; it returns the steps taken.
func run(t *testing.T, f *GroupFacts) []Step {
	t.Helper()
	var steps []Step
	for range 30 {
		p := DecideGroup(*f)
		steps = append(steps, p.Step)
		g := f.Group
		switch p.Step {
		case Wait, Fail:
			return steps
		case SetClass:
			g.Spec.VolumeGroupSnapshotClassName = ptr(p.Class)
		case AddFinalizer:
			g.Finalizers = append(g.Finalizers, snapshotapi.GroupBoundFinalizer)
		case RemoveFinalizer:
			g.Finalizers = slices.DeleteFunc(g.Finalizers, func(s string) bool { return s == snapshotapi.GroupBoundFinalizer })
			return steps
		case CreateContent:
			f.Content = p.Content.DeepCopy()
		case BindContent, MarkContent, AddContentFinalizer:
			f.Content = p.Content.DeepCopy()
		case DeleteContent:
			f.Content.DeletionTimestamp = &metav1.Time{Time: now}
		case CreateMember:
			vs := p.Snapshot.DeepCopy()
			vs.UID = types.UID("uid-" + vs.Name)
			f.Snapshots[vs.Name] = vs
		case DeleteMember:
			f.Snapshots[p.Snapshot.Name].DeletionTimestamp = &metav1.Time{Time: now}
		case CreateMemberContent, SetMemberContentStatus:
			f.MemberContents[p.MemberContent.Name] = p.MemberContent.DeepCopy()
		case BindMember:
			f.Snapshots[p.Snapshot.Name] = p.Snapshot.DeepCopy()
		case UpdateStatus:
			g.Status = p.Status
		default:
			t.Fatalf("unexpected step %s", p.Step)
		}
	}
	t.Fatalf("no rest after %v", steps)
	return nil
}

func TestDynamicGroupEndToEnd(t *testing.T) {
	g := group(func(g *vgsv1.VolumeGroupSnapshot) { g.Spec.VolumeGroupSnapshotClassName = nil })
	f := facts(g)
	f.Classes = append(f.Classes, class("other-driver-default", true, nil))
	f.Classes[1].Driver = "network.csi.volplane.io"
	f.Classes[0].Parameters = map[string]string{
		snapshotapi.GroupSecretNameParameter:      "s-${volumegroupsnapshot.name}",
		snapshotapi.GroupSecretNamespaceParameter: "${volumegroupsnapshot.namespace}",
	}
	steps := run(t, &f)
	// The finalizer before the content: a group deleted in between would
	// otherwise go at once and leave its content (and group snapshot).
	if want := []Step{SetClass, AddFinalizer, CreateContent, UpdateStatus, Wait}; !slices.Equal(steps, want) {
		t.Fatalf("steps %v, want %v", steps, want)
	}
	c := f.Content
	if c.Name != "groupsnapcontent-g-uid" || c.Spec.Driver != driver || *c.Spec.VolumeGroupSnapshotClassName != "grp-class" ||
		!slices.Equal(c.Spec.Source.VolumeHandles, []string{"vol-team-a-db-0", "vol-team-a-db-1"}) ||
		c.Spec.VolumeGroupSnapshotRef.UID != "g-uid" || c.Spec.VolumeGroupSnapshotRef.Namespace != ns {
		t.Fatalf("content %+v", c.Spec)
	}
	// Born with its finalizer: no window in which the group's deletion
	// deletes it past the sidecar.
	if !slices.Equal(c.Finalizers, []string{snapshotapi.GroupContentFinalizer}) {
		t.Errorf("content finalizers %v", c.Finalizers)
	}
	if c.Annotations[snapshotapi.GroupDeletionSecretName] != "s-grp" || c.Annotations[snapshotapi.GroupDeletionSecretNamespace] != ns {
		t.Errorf("secret annotations %v", c.Annotations)
	}
	if st := g.Status; st == nil || *st.BoundVolumeGroupSnapshotContentName != c.Name || *st.ReadyToUse {
		t.Fatalf("status %+v", g.Status)
	}

	// The sidecar answers: the members are made, then the group is ready.
	answered(true)(f.Content)
	p := DecideGroup(f)
	if p.Step != CreateMember {
		t.Fatalf("after the answer: %s", p.Step)
	}
	steps = run(t, &f)
	want := []Step{CreateMember, CreateMemberContent, SetMemberContentStatus, BindMember,
		CreateMember, CreateMemberContent, SetMemberContentStatus, BindMember, UpdateStatus, Wait}
	if !slices.Equal(steps, want) {
		t.Fatalf("steps %v, want %v", steps, want)
	}
	for i, h := range []string{"vol-team-a-db-0", "vol-team-a-db-1"} {
		vsName, mcName := MemberSnapshotName(g.UID, h), MemberContentName(g.UID, h)
		vs, mc := f.Snapshots[vsName], f.MemberContents[mcName]
		if vs == nil || mc == nil {
			t.Fatalf("member %s: snapshot %v content %v", h, vs, mc)
		}
		if !OwnedBy(vs, g) || !slices.Equal(vs.Finalizers, []string{snapshotapi.InGroupFinalizer}) ||
			*vs.Spec.Source.PersistentVolumeClaimName != []string{"db-0", "db-1"}[i] {
			t.Errorf("member snapshot %+v", vs.ObjectMeta)
		}
		if *vs.Status.BoundVolumeSnapshotContentName != mcName || *vs.Status.VolumeGroupSnapshotName != "grp" {
			t.Errorf("member status %+v", vs.Status)
		}
		if mc.Annotations[snapshotapi.GroupHandleAnnotation] != "gsh" || mc.Spec.VolumeSnapshotRef.UID != vs.UID ||
			mc.Spec.VolumeSnapshotRef.Namespace != ns || *mc.Spec.Source.VolumeHandle != h || *mc.Spec.SourceVolumeMode != v1.PersistentVolumeFilesystem ||
			mc.Annotations[snapshotapi.DeletionSecretName] != "s-grp" || mc.Annotations[snapshotapi.DeletionSecretNamespace] != ns {
			t.Errorf("member content %+v %+v", mc.ObjectMeta, mc.Spec)
		}
		if *mc.Status.SnapshotHandle != []string{"snap-0", "snap-1"}[i] || *mc.Status.VolumeGroupSnapshotHandle != "gsh" || !*mc.Status.ReadyToUse {
			t.Errorf("member content status %+v", mc.Status)
		}
	}
	if !*g.Status.ReadyToUse || g.Status.CreationTime == nil {
		t.Errorf("group status %+v", g.Status)
	}
}

// The member names are a function of the group's UID and the volume: the
// same after a crash, different for another group.
func TestMemberNames(t *testing.T) {
	a, b := MemberSnapshotName("u1", "vol"), MemberSnapshotName("u1", "vol")
	if a != b || a == MemberSnapshotName("u2", "vol") || !strings.HasPrefix(a, "snapshot-") || len(a) != len("snapshot-")+64 {
		t.Errorf("names %q %q", a, b)
	}
	if c := MemberContentName("u1", "vol"); c != "snapcontent-"+strings.TrimPrefix(a, "snapshot-") {
		t.Errorf("content name %q", c)
	}
}

func TestSources(t *testing.T) {
	f := facts(group())
	src, err := Sources(f.Group, f.Claims, f.Volumes)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, s := range src {
		got = append(got, s.Claim.Namespace+"/"+s.Claim.Name)
	}
	// team-b/db-0 carries the same label: never a member of team-a's group.
	if !slices.Equal(got, []string{"team-a/db-0", "team-a/db-1"}) {
		t.Errorf("sources %v", got)
	}
	expr := group(func(g *vgsv1.VolumeGroupSnapshot) {
		g.Spec.Source.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
			{Key: "app", Operator: metav1.LabelSelectorOpDoesNotExist}}}
	})
	if src, err := Sources(expr, f.Claims, f.Volumes); err != nil || len(src) != 1 || src[0].Claim.Name != "web" {
		t.Errorf("matchExpressions: %v %v", src, err)
	}
	for name, tc := range map[string]struct {
		mut  func(f *GroupFacts)
		want string
	}{
		"nothing matches":                {func(f *GroupFacts) { f.Group.Spec.Source.Selector.MatchLabels["app"] = "none" }, "not applied to any PVC"},
		"only another namespace matches": {func(f *GroupFacts) { f.Claims = f.Claims[3:] }, "not applied to any PVC"},
		"pending claim":                  {func(f *GroupFacts) { f.Claims[0].Status.Phase = v1.ClaimPending }, "not yet bound"},
		"PV bound to another claim": {func(f *GroupFacts) {
			f.Volumes[f.Claims[0].Spec.VolumeName].Spec.ClaimRef.Name = "other"
		}, "not bound or invalid"},
		"claim naming a PV of another namespace's claim": {func(f *GroupFacts) {
			f.Claims[0].Spec.VolumeName = "pv-team-b-db-0"
		}, "not bound or invalid"},
		"non-CSI": {func(f *GroupFacts) { f.Volumes[f.Claims[0].Spec.VolumeName].Spec.CSI = nil }, "non-CSI"},
	} {
		f := facts(group())
		tc.mut(&f)
		if _, err := Sources(f.Group, f.Claims, f.Volumes); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}
}

func TestDefaultClass(t *testing.T) {
	one := class("a", true, nil)
	if c, err := DefaultClass([]*vgsv1.VolumeGroupSnapshotClass{one, class("b", false, nil)}, driver); err != nil || c != one {
		t.Errorf("one default: %v %v", c, err)
	}
	if _, err := DefaultClass([]*vgsv1.VolumeGroupSnapshotClass{class("b", false, nil)}, driver); err == nil || err.Error() != "cannot find default group snapshot class" {
		t.Errorf("none: %v", err)
	}
	if _, err := DefaultClass([]*vgsv1.VolumeGroupSnapshotClass{one, class("c", true, nil)}, driver); err == nil || err.Error() != "2 default snapshot classes were found" {
		t.Errorf("two: %v", err)
	}
}

func TestDecideGroupRefusals(t *testing.T) {
	for name, tc := range map[string]struct {
		f      func() GroupFacts
		reason string
	}{
		"both sources": {func() GroupFacts {
			return facts(group(func(g *vgsv1.VolumeGroupSnapshot) { g.Spec.Source.VolumeGroupSnapshotContentName = ptr("x") }))
		}, "GroupSnapshotValidationError"},
		"class gone": {func() GroupFacts {
			f := facts(group())
			f.Classes = nil
			return f
		}, "GetGroupSnapshotClassFailed"},
		"no default class": {func() GroupFacts {
			f := facts(group(func(g *vgsv1.VolumeGroupSnapshot) { g.Spec.VolumeGroupSnapshotClassName = nil }))
			f.Classes[0].Annotations = nil
			return f
		}, "SetDefaultGroupSnapshotClassFailed"},
		"volume of another driver": {func() GroupFacts {
			f := facts(group())
			f.Volumes["pv-team-a-db-1"].Spec.CSI.Driver = "network.csi.volplane.io"
			return f
		}, "GroupSnapshotContentCreationFailed"},
		"dynamic content bound to another group": {func() GroupFacts {
			g := group(bound)
			f := facts(g)
			f.Content = content(g, func(c *vgsv1.VolumeGroupSnapshotContent) { c.Spec.VolumeGroupSnapshotRef.UID = "other" })
			return f
		}, "GroupSnapshotContentMisbound"},
		"driver lists a volume the group does not have": {func() GroupFacts {
			g := group(bound)
			f := facts(g)
			f.Content = content(g, answered(true), func(c *vgsv1.VolumeGroupSnapshotContent) {
				c.Status.VolumeSnapshotInfoList[1].VolumeHandle = "vol-team-b-db-0"
			})
			return f
		}, "GroupSnapshotMemberInvalid"},
		"a tenant's snapshot in a member's place": {func() GroupFacts {
			g := group(bound)
			f := facts(g)
			f.Content = content(g, answered(true))
			name := MemberSnapshotName(g.UID, "vol-team-a-db-0")
			f.Snapshots[name] = &snapv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: "t"}}
			return f
		}, "GroupSnapshotMemberMisbound"},
		"a tenant's snapshot owned by the group, of another content, in a member's place": {func() GroupFacts {
			g := group(bound)
			f := facts(g)
			f.Content = content(g, answered(true))
			name := MemberSnapshotName(g.UID, "vol-team-a-db-0")
			f.Snapshots[name] = &snapv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: "t",
				OwnerReferences: []metav1.OwnerReference{OwnerReference(g)}},
				Spec: snapv1.VolumeSnapshotSpec{Source: snapv1.VolumeSnapshotSource{VolumeSnapshotContentName: ptr("victim")}}}
			return f
		}, "GroupSnapshotMemberMisbound"},
		"a member content for another volume in the member's place": {func() GroupFacts {
			g := group(bound)
			f := facts(g)
			f.Content = content(g, answered(true))
			vs := MemberSnapshotName(g.UID, "vol-team-a-db-0")
			f.Snapshots[vs] = &snapv1.VolumeSnapshot{ObjectMeta: metav1.ObjectMeta{Name: vs, Namespace: ns, UID: "m",
				OwnerReferences: []metav1.OwnerReference{OwnerReference(g)}},
				Spec: snapv1.VolumeSnapshotSpec{Source: snapv1.VolumeSnapshotSource{PersistentVolumeClaimName: ptr("db-0")}}}
			mc := MemberContentName(g.UID, "vol-team-a-db-0")
			f.MemberContents[mc] = &snapv1.VolumeSnapshotContent{ObjectMeta: metav1.ObjectMeta{Name: mc,
				Annotations: map[string]string{snapshotapi.GroupHandleAnnotation: "gsh"}},
				Spec: snapv1.VolumeSnapshotContentSpec{Driver: driver, VolumeSnapshotRef: v1.ObjectReference{Namespace: ns, Name: vs, UID: "m"},
					Source: snapv1.VolumeSnapshotContentSource{VolumeHandle: ptr("vol-team-b-db-0")}}}
			return f
		}, "GroupSnapshotMemberMisbound"},
	} {
		p := DecideGroup(tc.f())
		if p.Step != Fail || p.Status == nil {
			t.Errorf("%s: %+v, want Fail %s", name, p, tc.reason)
			continue
		}
		if p.Step != Fail || len(p.Events) == 0 || p.Events[len(p.Events)-1].Reason != tc.reason || p.Err == nil ||
			p.Status.Error == nil || (p.Status.ReadyToUse != nil && *p.Status.ReadyToUse) {
			t.Errorf("%s: %+v, want Fail %s", name, p, tc.reason)
		}
	}
	// A status already carrying the message is not written again.
	f := facts(group())
	f.Classes = nil
	p := DecideGroup(f)
	f.Group.Status = p.Status
	if p := DecideGroup(f); p.Step != Wait || p.Err == nil || len(p.Events) != 0 {
		t.Errorf("repeat: %+v", p)
	}
}

func TestSegment(t *testing.T) {
	seg := map[string]string{"b": "2", "a": "1"}
	f := FormatSegment(seg)
	if f != "a=1,b=2" {
		t.Errorf("format %q", f)
	}
	if got, err := ParseSegment(f); err != nil || len(got) != 2 || got["a"] != "1" || got["b"] != "2" {
		t.Errorf("parse %v %v", got, err)
	}
	if _, err := ParseSegment("nope"); err == nil {
		t.Error("malformed accepted")
	}
}

// A ready group whose source claim is deleted stays ready: its members
// are not questioned for a claim that is gone.
func TestReadyGroupOutlivesItsClaims(t *testing.T) {
	g := group(func(g *vgsv1.VolumeGroupSnapshot) { g.Spec.VolumeGroupSnapshotClassName = nil })
	f := facts(g)
	run(t, &f)
	answered(true)(f.Content)
	run(t, &f)
	if !*g.Status.ReadyToUse {
		t.Fatalf("not ready: %+v", g.Status)
	}
	f.Claims, f.Volumes = nil, map[string]*v1.PersistentVolume{}
	if p := DecideGroup(f); p.Step != Wait || p.Err != nil {
		t.Errorf("claims gone: %+v", p)
	}
}

// A member snapshot's name leads to its content's name; no other name does.
func TestMemberContentOf(t *testing.T) {
	if got, ok := MemberContentOf(MemberSnapshotName("u1", "vol")); !ok || got != MemberContentName("u1", "vol") {
		t.Errorf("member: %q %v", got, ok)
	}
	for _, name := range []string{"snapshot-abc", "db-snap", "snapshot-" + strings.Repeat("g", 64), "snapcontent-" + strings.Repeat("a", 64), "snapshot-" + strings.Repeat("A", 64)} {
		if got, ok := MemberContentOf(name); ok {
			t.Errorf("%s: %q", name, got)
		}
	}
}
