package explain

import (
	"slices"
	"strings"
	"time"

	vgsv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/internal/grouping"
	"github.com/volplane/volplane/internal/snapshotapi"
)

// GroupReport explains one VolumeGroupSnapshot. What the group loop does
// next comes from grouping.DecideGroup (and, for its content, from
// grouping.DecideContent, the snapshotter's half), run on what explain
// read; which claims are its members from grouping.Sources.
type GroupReport struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Ready     bool   `json:"ready"`
	// Summary is one sentence: why it is not ready, what holds its
	// deletion, or that it is ready.
	Summary string `json:"summary"`
	// Source is "selector SELECTOR" (dynamic) or "content NAME"
	// (pre-provisioned).
	Source string         `json:"source"`
	Class  *SnapshotClass `json:"class,omitempty"`
	// Claims are the claims of the group's own namespace its selector
	// matches, each with what keeps it from being taken (if anything).
	Claims  []GroupClaim        `json:"claims,omitempty"`
	Content *GroupContentReport `json:"content,omitempty"`
	// Members are its member VolumeSnapshots and their contents.
	Members     []GroupMember `json:"members,omitempty"`
	Created     string        `json:"created,omitempty"`
	Error       string        `json:"error,omitempty"`
	Snapshotter *Provisioner  `json:"snapshotter,omitempty"`
	Finalizers  []FinalizerOn `json:"finalizers,omitempty"`
	Deletion    *Deletion     `json:"deletion,omitempty"`
}

// GroupClaim is one claim a group's selector matches.
type GroupClaim struct {
	Name   string `json:"name"`
	Volume string `json:"volume,omitempty"`
	// Problem is why the group cannot take it yet ("" when it can).
	Problem string `json:"problem,omitempty"`
}

// GroupMember is one member of a group: its VolumeSnapshot, its content,
// the volume it is of.
type GroupMember struct {
	Snapshot string `json:"snapshot"`
	Exists   bool   `json:"exists"`
	Content  string `json:"content,omitempty"`
	// Claim is the claim it is a snapshot of; Volume the CSI volume handle.
	Claim    string `json:"claim,omitempty"`
	Volume   string `json:"volume,omitempty"`
	Handle   string `json:"handle,omitempty"`
	Ready    bool   `json:"ready"`
	Deleting bool   `json:"deleting,omitempty"`
}

// GroupContentReport explains one VolumeGroupSnapshotContent (on its own,
// or as a group's).
type GroupContentReport struct {
	Name           string `json:"name"`
	Exists         bool   `json:"exists"`
	Summary        string `json:"summary,omitempty"`
	Driver         string `json:"driver,omitempty"`
	DeletionPolicy string `json:"deletionPolicy,omitempty"`
	// Handle is the backend group snapshot's ID; Volumes the volume
	// handles a dynamic content was asked for.
	Handle  string   `json:"handle,omitempty"`
	Volumes []string `json:"volumes,omitempty"`
	Ready   bool     `json:"ready"`
	Error   string   `json:"error,omitempty"`
	// Group is the VolumeGroupSnapshot it is bound to, "namespace/name",
	// and GroupState what became of it: Bound, Missing, Replaced, Waiting.
	Group        string        `json:"group,omitempty"`
	GroupState   string        `json:"groupState,omitempty"`
	BeingCreated bool          `json:"beingCreated,omitempty"`
	Members      []GroupMember `json:"members,omitempty"`
	Snapshotter  *Provisioner  `json:"snapshotter,omitempty"`
	// Finalizers and Deletion are filled for `explain
	// volumegroupsnapshotcontent`.
	Finalizers []FinalizerOn `json:"finalizers,omitempty"`
	Deletion   *Deletion     `json:"deletion,omitempty"`
}

// FindGroup, FindGroupContent and FindGroupClass look an object of the
// group snapshot API up by name; nil when the snapshot has none.
func (f *Facts) FindGroup(namespace, name string) *vgsv1.VolumeGroupSnapshot {
	for _, g := range f.GroupSnapshots {
		if g.Namespace == namespace && g.Name == name {
			return g
		}
	}
	return nil
}

func (f *Facts) FindGroupContent(name string) *vgsv1.VolumeGroupSnapshotContent {
	return named(f.GroupContents, name)
}

// groupFacts is what the group loop reads about g, from the facts: only
// the claims and VolumeSnapshots of g's own namespace.
func groupFacts(g *vgsv1.VolumeGroupSnapshot, f *Facts) grouping.GroupFacts {
	gf := grouping.GroupFacts{Group: g, Classes: f.GroupClasses, Now: f.Now,
		Volumes: map[string]*v1.PersistentVolume{}, Snapshots: map[string]*snapv1.VolumeSnapshot{},
		MemberContents: map[string]*snapv1.VolumeSnapshotContent{}}
	for _, c := range f.Claims {
		if c.Namespace == g.Namespace {
			gf.Claims = append(gf.Claims, c)
		}
	}
	for _, pv := range f.Volumes {
		gf.Volumes[pv.Name] = pv
	}
	for _, vs := range f.VolumeSnapshots {
		if vs.Namespace == g.Namespace {
			gf.Snapshots[vs.Name] = vs
		}
	}
	for _, c := range f.Contents {
		gf.MemberContents[c.Name] = c
	}
	gf.Content = f.FindGroupContent(grouping.ContentNameOf(g))
	return gf
}

// GroupDriver is the driver a group's report asks about: its content's,
// else its class's; "" if none is known.
func GroupDriver(g *vgsv1.VolumeGroupSnapshot, f *Facts) string {
	if c := f.FindGroupContent(grouping.ContentNameOf(g)); c != nil {
		return c.Spec.Driver
	}
	if c := groupClass(g, groupFacts(g, f)); c != nil && c.Exists {
		return c.Driver
	}
	return ""
}

// Group explains g from the facts.
func Group(g *vgsv1.VolumeGroupSnapshot, f *Facts) GroupReport {
	r := GroupReport{Namespace: g.Namespace, Name: g.Name}
	if st := g.Status; st != nil {
		r.Ready = st.ReadyToUse != nil && *st.ReadyToUse
		if st.CreationTime != nil {
			r.Created = st.CreationTime.UTC().Format(time.RFC3339)
		}
		if st.Error != nil && st.Error.Message != nil {
			r.Error = *st.Error.Message
		}
	}
	gf := groupFacts(g, f)
	src := g.Spec.Source
	switch {
	case src.Selector != nil:
		r.Source = "selector " + metav1.FormatLabelSelector(src.Selector)
		r.Class = groupClass(g, gf)
		r.Claims = groupClaims(g, gf)
	case src.VolumeGroupSnapshotContentName != nil:
		r.Source = "content " + *src.VolumeGroupSnapshotContentName
	}
	name := grouping.ContentNameOf(g)
	r.Content = groupContentOf(name, gf.Content, f)
	if c := gf.Content; c != nil && namesGroup(c, g) && c.Spec.VolumeGroupSnapshotRef.UID == g.UID {
		r.Content.GroupState = "Bound"
	}
	if gf.Content != nil {
		r.Finalizers = finalizersOf("vgsc "+name, gf.Content.Finalizers)
	}
	r.Members = groupMembers(g, gf)
	if d := GroupDriver(g, f); d != "" {
		if p, ok := f.Snapshotters[d]; ok {
			r.Snapshotter = &p
		}
	}
	r.Finalizers = append(finalizersOf("volumegroupsnapshot "+g.Namespace+"/"+g.Name, g.Finalizers), r.Finalizers...)
	plan := grouping.DecideGroup(gf)
	if g.DeletionTimestamp != nil {
		r.Deletion = groupDeletion(g, gf, plan, &r)
		r.Summary = r.Deletion.Summary
		return r
	}
	r.Summary = groupSummary(gf, plan, &r)
	return r
}

// groupClass is the class the group loop uses: the one named, else the
// default of the driver of its first volume; nil when none can be told.
func groupClass(g *vgsv1.VolumeGroupSnapshot, gf grouping.GroupFacts) *SnapshotClass {
	if name := g.Spec.VolumeGroupSnapshotClassName; name != nil {
		c := &SnapshotClass{Name: *name}
		if class := grouping.ClassNamed(gf.Classes, *name); class != nil {
			c.Exists, c.Driver, c.DeletionPolicy = true, class.Driver, string(class.DeletionPolicy)
		}
		return c
	}
	sources, err := grouping.Sources(g, gf.Claims, gf.Volumes)
	if err != nil {
		return nil
	}
	class, err := grouping.DefaultClass(gf.Classes, sources[0].Volume.Spec.CSI.Driver)
	if err != nil {
		return nil
	}
	return &SnapshotClass{Name: class.Name, Exists: true, Default: true, Driver: class.Driver, DeletionPolicy: string(class.DeletionPolicy)}
}

// noMatch is how grouping.Sources says that its selector matched no claim.
const noMatch = "not applied to any PVC"

// groupClaims asks grouping.Sources about each claim of the group's
// namespace alone: a claim its selector does not match gets "no claim
// matches"; one it matches is listed, with why it cannot be taken yet.
func groupClaims(g *vgsv1.VolumeGroupSnapshot, gf grouping.GroupFacts) []GroupClaim {
	var out []GroupClaim
	for _, c := range gf.Claims {
		_, err := grouping.Sources(g, []*v1.PersistentVolumeClaim{c}, gf.Volumes)
		if err != nil && strings.Contains(err.Error(), noMatch) {
			continue
		}
		gc := GroupClaim{Name: c.Name, Volume: c.Spec.VolumeName}
		if err != nil {
			gc.Problem = err.Error()
		}
		out = append(out, gc)
	}
	slices.SortFunc(out, func(a, b GroupClaim) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// groupMembers are the members the content's status lists (by the names
// the group loop gives them) and any other snapshot owned by the group.
func groupMembers(g *vgsv1.VolumeGroupSnapshot, gf grouping.GroupFacts) []GroupMember {
	var out []GroupMember
	seen := map[string]bool{}
	if c := gf.Content; c != nil && c.Status != nil && grouping.ContentNameOf(g) == c.Name && namesGroup(c, g) {
		for _, info := range c.Status.VolumeSnapshotInfoList {
			name := grouping.MemberSnapshotName(g.UID, info.VolumeHandle)
			m := GroupMember{Snapshot: name, Content: grouping.MemberContentName(g.UID, info.VolumeHandle),
				Volume: info.VolumeHandle, Handle: info.SnapshotHandle}
			if vs := gf.Snapshots[name]; vs != nil && grouping.OwnedBy(vs, g) {
				fillMember(&m, vs)
			}
			seen[name] = true
			out = append(out, m)
		}
	}
	for _, vs := range grouping.Members(gf.Snapshots, g) {
		if seen[vs.Name] {
			continue
		}
		m := GroupMember{Snapshot: vs.Name}
		fillMember(&m, vs)
		out = append(out, m)
	}
	return out
}

// namesGroup says whether the content's ref names the group: its
// namespace and name, and its UID once set. A content bound to another
// group (a user may name any content in spec.source) lends this group
// none of its members.
func namesGroup(c *vgsv1.VolumeGroupSnapshotContent, g *vgsv1.VolumeGroupSnapshot) bool {
	r := c.Spec.VolumeGroupSnapshotRef
	return r.Namespace == g.Namespace && r.Name == g.Name && (r.UID == "" || r.UID == g.UID)
}

func fillMember(m *GroupMember, vs *snapv1.VolumeSnapshot) {
	m.Exists, m.Deleting = true, vs.DeletionTimestamp != nil
	if c := vs.Spec.Source.PersistentVolumeClaimName; c != nil {
		m.Claim = *c
	}
	if st := vs.Status; st != nil {
		m.Ready = st.ReadyToUse != nil && *st.ReadyToUse
		if st.BoundVolumeSnapshotContentName != nil && m.Content == "" {
			m.Content = *st.BoundVolumeSnapshotContentName
		}
	}
}

// groupContentOf reports a group content as a group's.
func groupContentOf(name string, c *vgsv1.VolumeGroupSnapshotContent, f *Facts) *GroupContentReport {
	r := &GroupContentReport{Name: name, Exists: c != nil}
	if c == nil {
		return r
	}
	r.Driver, r.DeletionPolicy, r.Volumes = c.Spec.Driver, string(c.Spec.DeletionPolicy), c.Spec.Source.VolumeHandles
	if h := c.Spec.Source.GroupSnapshotHandles; h != nil {
		r.Handle = h.VolumeGroupSnapshotHandle
	}
	if st := c.Status; st != nil {
		r.Ready = st.ReadyToUse != nil && *st.ReadyToUse
		if st.VolumeGroupSnapshotHandle != nil {
			r.Handle = *st.VolumeGroupSnapshotHandle
		}
		if st.Error != nil && st.Error.Message != nil {
			r.Error = *st.Error.Message
		}
	}
	_, r.BeingCreated = c.Annotations[snapshotapi.GroupBeingCreated]
	ref := c.Spec.VolumeGroupSnapshotRef
	if ref.Name != "" {
		r.Group = ref.Namespace + "/" + ref.Name
		r.GroupState = groupState(c, f)
	}
	if g := f.FindGroup(ref.Namespace, ref.Name); g != nil && r.GroupState == "Bound" {
		gf := groupFacts(g, f)
		gf.Content = c
		r.Members = groupMembers(g, gf)
	}
	if p, ok := f.Snapshotters[c.Spec.Driver]; ok {
		r.Snapshotter = &p
	}
	return r
}

// groupState says what became of the group a content points at.
func groupState(c *vgsv1.VolumeGroupSnapshotContent, f *Facts) string {
	ref := c.Spec.VolumeGroupSnapshotRef
	if g := f.FindGroup(ref.Namespace, ref.Name); g != nil {
		return refState(true, g.UID, ref.UID)
	}
	return refState(false, "", ref.UID)
}
