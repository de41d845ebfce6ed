package explain

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	v1 "k8s.io/api/core/v1"

	"github.com/volplane/volplane/internal/heartbeat"
	"github.com/volplane/volplane/internal/invariants"
	"github.com/volplane/volplane/internal/snapshotapi"
)

// SnapshotReport explains one VolumeSnapshot.
type SnapshotReport struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Ready     bool   `json:"ready"`
	// Summary is one sentence: why it is not ready, what holds its
	// deletion, or that it is ready.
	Summary string `json:"summary"`
	// Source is what it is taken of: "pvc NAME" (dynamic) or
	// "content NAME" (pre-provisioned).
	Source      string         `json:"source"`
	Class       *SnapshotClass `json:"class,omitempty"`
	Content     *ContentReport `json:"content,omitempty"`
	RestoreSize string         `json:"restoreSize,omitempty"`
	Created     string         `json:"created,omitempty"`
	Error       string         `json:"error,omitempty"`
	// Group is the VolumeGroupSnapshot it is a member of.
	Group string `json:"group,omitempty"`
	// Snapshotter is whether anything serves its driver's snapshots (nil:
	// not checked).
	Snapshotter *Provisioner `json:"snapshotter,omitempty"`
	// RestoredBy are the claims that restore from it and are not Bound
	// yet, "namespace/name".
	RestoredBy []string      `json:"restoredBy,omitempty"`
	Finalizers []FinalizerOn `json:"finalizers,omitempty"`
	Deletion   *Deletion     `json:"deletion,omitempty"`
}

// SnapshotClass is the snapshot's VolumeSnapshotClass as the snapshot loop
// picks it.
type SnapshotClass struct {
	Name   string `json:"name"`
	Exists bool   `json:"exists"`
	// Default: the snapshot names no class and this is its driver's
	// default.
	Default        bool   `json:"default,omitempty"`
	Driver         string `json:"driver,omitempty"`
	DeletionPolicy string `json:"deletionPolicy,omitempty"`
}

// ContentReport explains one VolumeSnapshotContent (on its own, or as a
// snapshot's).
type ContentReport struct {
	Name           string `json:"name"`
	Exists         bool   `json:"exists"`
	Summary        string `json:"summary,omitempty"`
	Driver         string `json:"driver,omitempty"`
	DeletionPolicy string `json:"deletionPolicy,omitempty"`
	// Handle is the backend snapshot's ID; SourceVolume the volume it was
	// taken of (dynamic).
	Handle       string `json:"handle,omitempty"`
	SourceVolume string `json:"sourceVolume,omitempty"`
	Ready        bool   `json:"ready"`
	RestoreSize  string `json:"restoreSize,omitempty"`
	Error        string `json:"error,omitempty"`
	// Snapshot is the VolumeSnapshot it is bound to, "namespace/name", and
	// SnapshotState what became of it: Bound, Missing, Replaced, Waiting.
	Snapshot      string `json:"snapshot,omitempty"`
	SnapshotState string `json:"snapshotState,omitempty"`
	BeingCreated  bool   `json:"beingCreated,omitempty"`
	GroupHandle   string `json:"groupHandle,omitempty"`
	// ManagedBy is the node its label gives it to (distributed
	// snapshotting): in node deployment only that node's snapshotter
	// serves it.
	ManagedBy   string       `json:"managedBy,omitempty"`
	Snapshotter *Provisioner `json:"snapshotter,omitempty"`
	// Finalizers and Deletion are filled for `explain volumesnapshotcontent`.
	Finalizers []FinalizerOn `json:"finalizers,omitempty"`
	Deletion   *Deletion     `json:"deletion,omitempty"`
}

// FinalizerOn is one finalizer, on the object explained or its content:
// what it protects and who removes it.
type FinalizerOn struct {
	Object    string `json:"object"`
	Name      string `json:"name"`
	Meaning   string `json:"meaning"`
	RemovedBy string `json:"removedBy"`
}

// SnapshotterLeaseName is the leader election Lease of the upstream
// csi-snapshotter for driver: a fresh one says a snapshotter serves it.
func SnapshotterLeaseName(driver string) string {
	return heartbeat.Snapshotter.SidecarLeaseName(driver)
}

// SnapshotDriver is the driver a snapshot's report asks about: its
// content's, else its class's, else its claim's volume's; "" if none is
// known.
func SnapshotDriver(vs *snapv1.VolumeSnapshot, f *Facts) string {
	if c := f.FindContent(contentNameOf(vs)); c != nil {
		return c.Spec.Driver
	}
	if class := snapshotClass(vs, f); class != nil && class.Exists {
		return class.Driver
	}
	if pv := sourceVolume(vs, f); pv != nil && pv.Spec.CSI != nil {
		return pv.Spec.CSI.Driver
	}
	return ""
}

// Snapshot explains vs from the facts.
func Snapshot(vs *snapv1.VolumeSnapshot, f *Facts) SnapshotReport {
	r := SnapshotReport{Namespace: vs.Namespace, Name: vs.Name}
	st := vs.Status
	if st != nil {
		r.Ready = st.ReadyToUse != nil && *st.ReadyToUse
		if st.RestoreSize != nil {
			r.RestoreSize = st.RestoreSize.String()
		}
		if st.CreationTime != nil {
			r.Created = st.CreationTime.UTC().Format(time.RFC3339)
		}
		if st.Error != nil && st.Error.Message != nil {
			r.Error = *st.Error.Message
		}
		if st.VolumeGroupSnapshotName != nil {
			r.Group = *st.VolumeGroupSnapshotName
		}
	}
	if claim := vs.Spec.Source.PersistentVolumeClaimName; claim != nil {
		r.Source = "pvc " + *claim
		r.Class = snapshotClass(vs, f)
	} else if name := vs.Spec.Source.VolumeSnapshotContentName; name != nil {
		r.Source = "content " + *name
	}
	if name := contentNameOf(vs); name != "" {
		c := f.FindContent(name)
		r.Content = contentOf(name, c, f)
		if c != nil && pointsAt(c, vs) && c.Spec.VolumeSnapshotRef.UID == vs.UID {
			r.Content.SnapshotState = "Bound"
		}
		if c != nil {
			r.Finalizers = finalizersOf("volumesnapshotcontent "+c.Name, c.Finalizers)
		}
	}
	if d := SnapshotDriver(vs, f); d != "" {
		if p, ok := f.Snapshotters[d]; ok {
			r.Snapshotter = &p
		}
	}
	for _, c := range f.Claims {
		// Claims of the snapshot's namespace only: one of another namespace
		// (dataSourceRef.namespace) is not restored from it.
		if ns, name, ok := invariants.SnapshotSource(c); ok && c.Namespace == vs.Namespace && ns == vs.Namespace && name == vs.Name && c.Status.Phase != v1.ClaimBound {
			r.RestoredBy = append(r.RestoredBy, c.Namespace+"/"+c.Name)
		}
	}
	slices.Sort(r.RestoredBy)
	r.Finalizers = append(finalizersOf("volumesnapshot "+vs.Namespace+"/"+vs.Name, vs.Finalizers), r.Finalizers...)
	r.Summary = snapshotSummary(vs, &r, f)
	if vs.DeletionTimestamp != nil {
		r.Deletion = snapshotDeletion(vs, &r, f)
		r.Summary = r.Deletion.Summary
	}
	return r
}

// contentNameOf is the content a snapshot is (or will be) bound to: its
// status's, else the pre-provisioned one it names, else the dynamic name.
func contentNameOf(vs *snapv1.VolumeSnapshot) string {
	if st := vs.Status; st != nil && st.BoundVolumeSnapshotContentName != nil && *st.BoundVolumeSnapshotContentName != "" {
		return *st.BoundVolumeSnapshotContentName
	}
	if name := vs.Spec.Source.VolumeSnapshotContentName; name != nil {
		return *name
	}
	if vs.UID == "" {
		return ""
	}
	return snapshotapi.ContentName(vs.UID)
}

// sourceVolume is the bound volume of a dynamic snapshot's claim.
func sourceVolume(vs *snapv1.VolumeSnapshot, f *Facts) *v1.PersistentVolume {
	name := vs.Spec.Source.PersistentVolumeClaimName
	if name == nil {
		return nil
	}
	c := f.FindClaim(vs.Namespace, *name)
	if c == nil || c.Spec.VolumeName == "" {
		return nil
	}
	return f.FindVolume(c.Spec.VolumeName)
}

// snapshotClass is the class the snapshot loop uses: the one named, else
// the default of the claim's volume's driver; nil when none can be told.
func snapshotClass(vs *snapv1.VolumeSnapshot, f *Facts) *SnapshotClass {
	if name := vs.Spec.VolumeSnapshotClassName; name != nil {
		c := &SnapshotClass{Name: *name}
		if class := f.FindSnapshotClass(*name); class != nil {
			c.Exists, c.Driver, c.DeletionPolicy = true, class.Driver, string(class.DeletionPolicy)
		}
		return c
	}
	pv := sourceVolume(vs, f)
	if pv == nil || pv.Spec.CSI == nil {
		return nil
	}
	defaults := f.DefaultSnapshotClasses(pv.Spec.CSI.Driver)
	if len(defaults) != 1 {
		return nil
	}
	return &SnapshotClass{Name: defaults[0].Name, Exists: true, Default: true, Driver: defaults[0].Driver,
		DeletionPolicy: string(defaults[0].DeletionPolicy)}
}

// contentOf reports a content as a snapshot's.
func contentOf(name string, c *snapv1.VolumeSnapshotContent, f *Facts) *ContentReport {
	r := &ContentReport{Name: name, Exists: c != nil}
	if c == nil {
		return r
	}
	r.Driver, r.DeletionPolicy, r.Handle = c.Spec.Driver, string(c.Spec.DeletionPolicy), invariants.ContentHandle(c)
	if c.Spec.Source.VolumeHandle != nil {
		r.SourceVolume = *c.Spec.Source.VolumeHandle
	}
	if st := c.Status; st != nil {
		r.Ready = st.ReadyToUse != nil && *st.ReadyToUse
		if st.RestoreSize != nil {
			r.RestoreSize = fmt.Sprintf("%d bytes", *st.RestoreSize)
		}
		if st.Error != nil && st.Error.Message != nil {
			r.Error = *st.Error.Message
		}
		if st.VolumeGroupSnapshotHandle != nil {
			r.GroupHandle = *st.VolumeGroupSnapshotHandle
		}
	}
	if h, ok := c.Annotations[snapshotapi.GroupHandleAnnotation]; ok && r.GroupHandle == "" {
		r.GroupHandle = h
	}
	_, r.BeingCreated = c.Annotations[snapshotapi.BeingCreated]
	r.ManagedBy = c.Labels[snapshotapi.ManagedByLabel]
	ref := c.Spec.VolumeSnapshotRef
	if ref.Name != "" {
		r.Snapshot = ref.Namespace + "/" + ref.Name
		r.SnapshotState = snapshotState(c, f)
	}
	if p, ok := f.Snapshotters[c.Spec.Driver]; ok {
		r.Snapshotter = &p
	}
	return r
}

// snapshotState says what became of the snapshot a content points at.
func snapshotState(c *snapv1.VolumeSnapshotContent, f *Facts) string {
	ref := c.Spec.VolumeSnapshotRef
	if vs := f.FindSnapshot(ref.Namespace, ref.Name); vs != nil {
		return refState(true, vs.UID, ref.UID)
	}
	return refState(false, "", ref.UID)
}

// refState says what became of the object a content's reference (holding
// refUID) names: found with uid, or not found.
func refState(found bool, uid, refUID types.UID) string {
	switch {
	case !found && refUID == "":
		return "Waiting"
	case !found:
		return "Missing"
	case refUID != "" && uid != refUID:
		return "Replaced"
	case refUID == "":
		return "Waiting"
	}
	return "Bound"
}

// snapshotSummary is the sentence that says why the snapshot is not ready.
func snapshotSummary(vs *snapv1.VolumeSnapshot, r *SnapshotReport, f *Facts) string {
	if r.Error != "" && !r.Ready {
		return Sentence("Not ready: the snapshot failed: " + strings.TrimSuffix(r.Error, "."))
	}
	if r.Ready {
		s := "Ready"
		if r.Content != nil && r.Content.Handle != "" {
			s += fmt.Sprintf(": backend snapshot %s of %s", r.Content.Handle, r.Content.Driver)
		}
		if r.RestoreSize != "" {
			s += ", restore size " + r.RestoreSize
		}
		return s + "."
	}
	if claim := vs.Spec.Source.PersistentVolumeClaimName; claim != nil {
		if why := dynamicSourceWaits(vs, *claim, r, f); why != "" {
			return why
		}
	}
	return contentWaits(vs, r, f)
}

// pointsAt says whether a content's volumeSnapshotRef names vs (by
// namespace and name, and by UID once it has one).
func pointsAt(c *snapv1.VolumeSnapshotContent, vs *snapv1.VolumeSnapshot) bool {
	ref := c.Spec.VolumeSnapshotRef
	return ref.Namespace == vs.Namespace && ref.Name == vs.Name && (ref.UID == "" || ref.UID == vs.UID)
}

// dynamicSourceWaits: what a dynamic snapshot waits for before it has a
// content: its claim, a CSI volume, its class; "" once it can have one.
func dynamicSourceWaits(vs *snapv1.VolumeSnapshot, claimName string, r *SnapshotReport, f *Facts) string {
	if r.Content != nil && r.Content.Exists || vs.Status != nil && vs.Status.BoundVolumeSnapshotContentName != nil {
		return ""
	}
	c := f.FindClaim(vs.Namespace, claimName)
	switch {
	case c == nil:
		return fmt.Sprintf("Not ready: its claim %s/%s does not exist.", vs.Namespace, claimName)
	case c.Status.Phase != v1.ClaimBound || c.Spec.VolumeName == "":
		return fmt.Sprintf("Not ready: its claim %s is not bound yet (a snapshot is taken of a bound volume).", claimName)
	}
	pv := f.FindVolume(c.Spec.VolumeName)
	switch {
	case pv == nil:
		return fmt.Sprintf("Not ready: its claim's volume %s does not exist.", c.Spec.VolumeName)
	case pv.Spec.CSI == nil:
		return fmt.Sprintf("Not ready: its claim's volume %s is not a CSI volume, which cannot be snapshotted.", pv.Name)
	}
	driver := pv.Spec.CSI.Driver
	if name := vs.Spec.VolumeSnapshotClassName; name != nil {
		switch {
		case !r.Class.Exists:
			return fmt.Sprintf("Not ready: its VolumeSnapshotClass %s does not exist.", *name)
		case r.Class.Driver != driver:
			return fmt.Sprintf("Not ready: its VolumeSnapshotClass %s is for driver %s, its claim's volume is of %s.", *name, r.Class.Driver, driver)
		}
	} else {
		switch defaults := f.DefaultSnapshotClasses(driver); len(defaults) {
		case 0:
			return fmt.Sprintf("Not ready: it names no VolumeSnapshotClass and driver %s has no default one (%s: \"true\"); name one in spec.volumeSnapshotClassName.",
				driver, snapshotapi.DefaultClassAnnotation)
		case 1:
		default:
			var names []string
			for _, d := range defaults {
				names = append(names, d.Name)
			}
			return fmt.Sprintf("Not ready: it names no VolumeSnapshotClass and driver %s has several default ones (%s); name one.", driver, list(names))
		}
	}
	return fmt.Sprintf("Not ready: waiting for the snapshot loop to create its content %s (is it running?).", r.Content.Name)
}

// contentWaits: what a snapshot with a content (or naming one) waits for.
func contentWaits(vs *snapv1.VolumeSnapshot, r *SnapshotReport, f *Facts) string {
	c := r.Content
	switch {
	case c == nil:
		return "Not ready: it names neither a claim nor a content."
	case !c.Exists && vs.Status != nil && vs.Status.BoundVolumeSnapshotContentName != nil:
		return fmt.Sprintf("Not ready: its content %s is missing (SnapshotContentMissing).", c.Name)
	case !c.Exists:
		return fmt.Sprintf("Not ready: waiting for content %s, which does not exist.", c.Name)
	case !pointsAt(f.FindContent(c.Name), vs):
		return fmt.Sprintf("Not ready: its content %s is bound to another snapshot (%s): misbound (SnapshotMisbound).", c.Name, orNone(c.Snapshot))
	case c.Error != "":
		return Sentence("Not ready: the driver failed: " + strings.TrimSuffix(c.Error, "."))
	case c.GroupHandle != "" && c.Handle == "":
		return fmt.Sprintf("Not ready: a member of group snapshot %s, which its group loop takes.", c.GroupHandle)
	case c.BeingCreated && c.Handle == "":
		return fmt.Sprintf("Not ready: the snapshotter of %s is taking it (CreateSnapshot in flight).", c.Driver)
	case c.Handle == "" || (vs.Spec.Source.VolumeSnapshotContentName != nil && !c.Ready):
		return "Not ready: waiting for the snapshotter: " + servingNote(c)
	case !c.Ready:
		return fmt.Sprintf("Not ready: driver %s has taken snapshot %s and reports it not ready yet (still being processed).", c.Driver, c.Handle)
	}
	return fmt.Sprintf("Not ready: its content %s is ready; the snapshot loop copies its status at its next sync (is it running?).", c.Name)
}

// servingNote is snapshotterNote for one content: when only node
// snapshotters report and none on the node its label names, that node's
// is the one it waits for, however many others serve the driver.
func servingNote(c *ContentReport) string {
	p := c.Snapshotter
	if c.ManagedBy != "" && p != nil && p.Serving && len(p.Nodes) > 0 && !slices.Contains(p.Nodes, c.ManagedBy) {
		return fmt.Sprintf("it is labelled %s=%s, and no snapshotter of %s on node %s has reported (%s).",
			snapshotapi.ManagedByLabel, c.ManagedBy, c.Driver, c.ManagedBy, strings.TrimSuffix(p.Note, "."))
	}
	return snapshotterNote(c.Driver, p)
}

// snapshotterNote says whether anything serves a driver's snapshots, as
// the end of a sentence (after a colon: not capitalised, a driver name may
// begin it).
func snapshotterNote(driver string, p *Provisioner) string {
	if p == nil || p.Note == "" {
		return fmt.Sprintf("no snapshotter serving driver %s has reported.", driver)
	}
	if note := strings.TrimSpace(p.Note); !strings.HasSuffix(note, ".") {
		return note + "."
	}
	return strings.TrimSpace(p.Note)
}
