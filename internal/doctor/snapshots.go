package doctor

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	v1 "k8s.io/api/core/v1"

	"github.com/volplane/volplane/internal/invariants"
	"github.com/volplane/volplane/internal/snapshotapi"
)

// The object kinds of the snapshot API.
const (
	ObjectSnapshot        = "VolumeSnapshot"
	ObjectContent         = "VolumeSnapshotContent"
	ObjectBackendSnapshot = "BackendSnapshot"
)

// BackendSnapshot is one snapshot of ListSnapshots.
type BackendSnapshot struct {
	ID string
	// Source is the volume it was taken of; SizeBytes its size (0: not
	// reported).
	Source    string
	SizeBytes int64
}

func snapshotObject(vs *snapv1.VolumeSnapshot) Object {
	return Object{Kind: ObjectSnapshot, Namespace: vs.Namespace, Name: vs.Name}
}

func contentObject(c *snapv1.VolumeSnapshotContent) Object {
	return Object{Kind: ObjectContent, Name: c.Name, Driver: c.Spec.Driver}
}

// snapshotFindings are the findings about the snapshot API: its stuck
// deletions, the contents whose snapshot is gone and the backend snapshots
// no content names; notes say what was not checked.
func snapshotFindings(s *Snapshot, t Thresholds) ([]Finding, []string) {
	if s.SnapshotsSkipped != "" {
		return nil, []string{"snapshots not checked: " + s.SnapshotsSkipped}
	}
	var out []Finding
	out = append(out, stuckSnapshots(s, t)...)
	out = append(out, orphanedContents(s, t)...)
	var notes []string
	if s.Backends != nil {
		orphans, n := orphanedBackendSnapshots(s)
		out = append(out, orphans...)
		notes = append(notes, n...)
		missing, n := missingBackendSnapshots(s)
		out = append(out, missing...)
		notes = append(notes, n...)
	}
	return out, notes
}

// orphanedBackendSnapshots: snapshots an endpoint listed both before and
// after the cluster was read (a complete ListSnapshots, every page, each
// time) that no content names by handle. One that may be a content's being
// created (a content of the driver, of the same source volume, carrying
// BeingCreated and no handle yet) is held back. The fix adopts it as a
// pre-provisioned content with policy Retain, never a delete: a backend
// snapshot's data is someone's until they say otherwise.
func orphanedBackendSnapshots(s *Snapshot) ([]Finding, []string) {
	handles := map[invariants.Volume]bool{}
	creating := map[invariants.Volume]bool{}
	for _, c := range s.Contents {
		if h := invariants.ContentHandle(c); h != "" {
			handles[invariants.Volume{Driver: c.Spec.Driver, Handle: h}] = true
		} else if _, ok := c.Annotations[snapshotapi.BeingCreated]; ok && c.Spec.Source.VolumeHandle != nil {
			creating[invariants.Volume{Driver: c.Spec.Driver, Handle: *c.Spec.Source.VolumeHandle}] = true
		}
	}
	grouping := map[string]bool{} // drivers a group snapshot is being made of
	for _, g := range s.GroupContents {
		if g.Status != nil {
			for _, m := range g.Status.VolumeSnapshotInfoList {
				handles[invariants.Volume{Driver: g.Spec.Driver, Handle: m.SnapshotHandle}] = true
			}
		}
		if g.DeletionTimestamp == nil && (g.Status == nil || g.Status.ReadyToUse == nil || !*g.Status.ReadyToUse) {
			grouping[g.Spec.Driver] = true
		}
	}
	var out []Finding
	unlisted := map[string]bool{}
	for _, b := range s.Backends {
		if !b.ListsSnapshots {
			if slices.ContainsFunc(s.Contents, func(c *snapv1.VolumeSnapshotContent) bool { return c.Spec.Driver == b.Driver }) {
				unlisted[b.Driver] = true
			}
			continue
		}
		for _, snap := range b.Snapshots {
			if !b.RelistedSnapshots[snap.ID] || handles[invariants.Volume{Driver: b.Driver, Handle: snap.ID}] {
				continue
			}
			f := Finding{Kind: KindOrphanedBackendSnapshot, Severity: SeverityProblem,
				Object: Object{Kind: ObjectBackendSnapshot, Name: snap.ID, Driver: b.Driver, Node: b.Node},
				Problem: fmt.Sprintf("Driver %s holds snapshot %s%s (of volume %s), which no VolumeSnapshotContent names: its space is used and no claim can be restored from it.",
					b.Driver, snap.ID, onNode(b.Node), orUnknown(snap.Source))}
			switch {
			case creating[invariants.Volume{Driver: b.Driver, Handle: snap.Source}]:
				f.Problem += " Not offered for adoption while a content of the same volume is being created: it may be that content's; check again once it is ready."
			case grouping[b.Driver]:
				f.Problem += fmt.Sprintf(" Not offered for adoption while a group snapshot of %s is being made: it may be one of its members; check again once it is ready.", b.Driver)
			default:
				f.Fixes = []Fix{{Says: "adopt it as a pre-provisioned content of policy Retain (data kept) and a VolumeSnapshot in the namespace you name, the only one it binds to",
					Command: adoptSnapshotManifest(b.Driver, snap)}}
			}
			out = append(out, f)
		}
	}
	var notes []string
	for _, d := range slices.Sorted(maps.Keys(unlisted)) {
		notes = append(notes, fmt.Sprintf("backend snapshots of driver %s not checked: it does not list its snapshots (LIST_SNAPSHOTS)", d))
	}
	return out, notes
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// adoptSnapshotManifest is the command that creates a pre-provisioned
// content for a backend snapshot (policy Retain) and the VolumeSnapshot
// that binds it, in a namespace the user names. What the driver says is
// untrusted: it is written as JSON strings, in a quoted here-document.
func adoptSnapshotManifest(driver string, snap BackendSnapshot) string {
	name := "adopted-" + strings.Trim(notInName.ReplaceAllString(strings.ToLower(snap.ID), "-"), "-.")
	var m strings.Builder
	m.WriteString("kubectl create -f - <<'EOF'\n")
	m.WriteString("apiVersion: snapshot.storage.k8s.io/v1\nkind: VolumeSnapshotContent\nmetadata:\n")
	fmt.Fprintf(&m, "  name: %s\nspec:\n  deletionPolicy: Retain\n  driver: %s\n", name, quoted(driver))
	fmt.Fprintf(&m, "  source:\n    snapshotHandle: %s\n", quoted(snap.ID))
	m.WriteString("  volumeSnapshotRef: # the VolumeSnapshot that gets its data, and no other\n    namespace: NAMESPACE\n    name: NAME\n")
	m.WriteString("---\napiVersion: snapshot.storage.k8s.io/v1\nkind: VolumeSnapshot\nmetadata:\n  namespace: NAMESPACE\n  name: NAME\n")
	fmt.Fprintf(&m, "spec:\n  source:\n    volumeSnapshotContentName: %s\n", name)
	m.WriteString("EOF")
	return m.String()
}

// orphanedContents: contents bound to a VolumeSnapshot (their
// volumeSnapshotRef has a UID) that no longer exists, older than
// Thresholds.DeletingFor and not being deleted. Under Retain that is the
// policy's rest (information); under Delete nothing deletes it: volplane's
// snapshot loop never deletes a content whose snapshot is merely gone
// (it may have been removed by hand, its data still wanted).
func orphanedContents(s *Snapshot, t Thresholds) []Finding {
	live := map[string]bool{}
	for _, vs := range s.VolumeSnapshots {
		live[string(vs.UID)] = true
	}
	var out []Finding
	for _, c := range s.Contents {
		ref := c.Spec.VolumeSnapshotRef
		if ref.UID == "" || live[string(ref.UID)] || c.DeletionTimestamp != nil || s.Now.Sub(c.CreationTimestamp.Time) < t.DeletingFor {
			continue
		}
		handle := invariants.ContentHandle(c)
		f := Finding{Kind: KindOrphanedContent, Object: contentObject(c)}
		gone := fmt.Sprintf("Its VolumeSnapshot %s/%s (uid %s) is gone", ref.Namespace, ref.Name, ref.UID)
		adopt := Fix{Says: "to restore from it, adopt its backend snapshot as a new pre-provisioned content and VolumeSnapshot",
			Command: adoptSnapshotManifest(c.Spec.Driver, BackendSnapshot{ID: handle})}
		if c.Spec.DeletionPolicy == snapv1.VolumeSnapshotContentRetain {
			f.Severity = SeverityInfo
			f.Problem = gone + fmt.Sprintf("; policy Retain keeps the content and its backend snapshot %s until you act.", orUnknown(handle))
			if handle != "" {
				f.Fixes = append(f.Fixes, adopt, Fix{Says: "once adopted, or if you do not need it, delete this content (Retain: the backend snapshot stays)",
					Risk:    "without an adoption first, doctor then reports its backend snapshot as orphaned",
					Command: "kubectl delete volumesnapshotcontent " + c.Name})
			}
			out = append(out, f)
			continue
		}
		f.Severity = SeverityProblem
		f.Problem = gone + fmt.Sprintf("; policy Delete, yet nothing deletes the content: the snapshot loop never deletes a content whose snapshot is merely gone. Its backend snapshot %s is kept meanwhile.", orUnknown(handle))
		f.Fixes = []Fix{{Says: "see what it holds", Command: "volplane explain volumesnapshotcontent " + c.Name},
			{Says: "keep its data: switch it to policy Retain (doctor then offers to adopt its backend snapshot)",
				Command: setRetain(c)},
			{Says: "if its data is no longer wanted, delete it: the snapshotter deletes the backend snapshot first",
				Risk:    fmt.Sprintf("policy Delete: the backend snapshot %s and its data are deleted", orUnknown(handle)),
				Command: "kubectl delete volumesnapshotcontent " + c.Name}}
		out = append(out, f)
	}
	return out
}

// setRetain is the JSON patch that switches a content from Delete to
// Retain, testing its resourceVersion and its policy first.
func setRetain(c *snapv1.VolumeSnapshotContent) string {
	var ops []string
	if c.ResourceVersion != "" {
		ops = append(ops, patchOp("test", "/metadata/resourceVersion", c.ResourceVersion))
	}
	ops = append(ops, patchOp("test", "/spec/deletionPolicy", string(snapv1.VolumeSnapshotContentDelete)),
		patchOp("replace", "/spec/deletionPolicy", string(snapv1.VolumeSnapshotContentRetain)))
	return fmt.Sprintf("kubectl patch volumesnapshotcontent %s --type=json -p %s", c.Name, shellQuote("["+strings.Join(ops, ", ")+"]"))
}

// restoringClaims are the Pending claims (not being deleted) of the
// snapshot's namespace whose data source is the snapshot, as the snapshot
// loop counts them: a claim of another namespace naming it (a tenant's
// dataSourceRef.namespace) holds nothing.
func restoringClaims(s *Snapshot, vs *snapv1.VolumeSnapshot) []*v1.PersistentVolumeClaim {
	var out []*v1.PersistentVolumeClaim
	for _, c := range s.Claims {
		ns, name, ok := invariants.SnapshotSource(c)
		if ok && c.Namespace == vs.Namespace && ns == vs.Namespace && name == vs.Name && c.Status.Phase != v1.ClaimBound && c.DeletionTimestamp == nil {
			out = append(out, c)
		}
	}
	return out
}

// boundContent is the content the snapshot is bound to (status, else a
// pre-provisioned spec name), if it exists.
func (s *Snapshot) boundContent(vs *snapv1.VolumeSnapshot) (string, *snapv1.VolumeSnapshotContent) {
	name := ""
	if vs.Status != nil && vs.Status.BoundVolumeSnapshotContentName != nil {
		name = *vs.Status.BoundVolumeSnapshotContentName
	} else if vs.Spec.Source.VolumeSnapshotContentName != nil {
		name = *vs.Spec.Source.VolumeSnapshotContentName
	}
	if name == "" {
		return "", nil
	}
	return name, s.FindContent(name)
}

// snapshotOf is the live VolumeSnapshot a content is bound to (by UID).
func (s *Snapshot) snapshotOf(c *snapv1.VolumeSnapshotContent) *snapv1.VolumeSnapshot {
	ref := c.Spec.VolumeSnapshotRef
	for _, vs := range s.VolumeSnapshots {
		if ref.UID != "" && vs.UID == ref.UID {
			return vs
		}
	}
	return nil
}
