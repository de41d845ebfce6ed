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

// KindMissingBackendSnapshot: a VolumeSnapshotContent ready to use whose
// backend snapshot its driver no longer has: every restore from it fails.
const KindMissingBackendSnapshot Kind = "missing-backend-snapshot"

// missingBackendSnapshots: contents ready to use, with a snapshot handle,
// not being deleted (nor marked so), whose handle no listing of their
// driver holds, neither the one before the cluster was read nor the one
// after (a content is made ready only once its backend snapshot exists, so
// a snapshot taken meanwhile is in the second). The listing must be
// complete: a central endpoint, or every endpoint of a node-local driver
// that could hold it (the nodes the source volume's PV allows, every node
// running the driver when no PV tells), each listing its snapshots;
// otherwise a note says what was not checked.
//
// The fix only advises: the content's data is gone, yet the content is
// the record a snapshot is bound to; deleting it is never offered (the
// snapshot loop, the snapshotter and the owner of the VolumeSnapshot each
// have their say). What is offered is seeing who restores from it and
// taking the snapshot again.
func missingBackendSnapshots(s *Snapshot) ([]Finding, []string) {
	var out []Finding
	unchecked := map[string]int{}
	for _, c := range s.Contents {
		handle := invariants.ContentHandle(c)
		st := c.Status
		if handle == "" || st == nil || st.ReadyToUse == nil || !*st.ReadyToUse || c.DeletionTimestamp != nil {
			continue
		}
		if _, ok := c.Annotations[snapshotapi.BeingDeleted]; ok {
			continue
		}
		listed, why := snapshotListingOf(s, c)
		if why != "" {
			unchecked[fmt.Sprintf("of driver %s not checked for their backend snapshot: %s", c.Spec.Driver, why)]++
			continue
		}
		if slices.ContainsFunc(listed, func(b Backend) bool { return b.holdsSnapshot(handle) || b.RelistedSnapshots[handle] }) {
			continue
		}
		out = append(out, missingSnapshotFinding(s, c, handle))
	}
	var notes []string
	for _, why := range slices.Sorted(maps.Keys(unchecked)) {
		notes = append(notes, fmt.Sprintf("%d ready VolumeSnapshotContent(s) %s", unchecked[why], why))
	}
	return out, notes
}

// snapshotListingOf is listingOf for a content's backend snapshot: where
// its source volume could be (its PV, found by driver and handle), else
// anywhere its driver runs; every endpoint of it must list snapshots.
func snapshotListingOf(s *Snapshot, c *snapv1.VolumeSnapshotContent) ([]Backend, string) {
	pv := sourcePV(s, c)
	if pv == nil {
		pv = &v1.PersistentVolume{Spec: v1.PersistentVolumeSpec{PersistentVolumeSource: v1.PersistentVolumeSource{
			CSI: &v1.CSIPersistentVolumeSource{Driver: c.Spec.Driver}}}}
	}
	listed, why := listingOf(s, pv)
	if why != "" {
		return nil, why
	}
	for _, b := range listed {
		if !b.ListsSnapshots {
			return nil, "it does not list its snapshots (LIST_SNAPSHOTS)"
		}
	}
	return listed, ""
}

// sourcePV is the PV of the content's driver whose handle is the
// content's source volume, nil if none (pre-provisioned, or gone).
func sourcePV(s *Snapshot, c *snapv1.VolumeSnapshotContent) *v1.PersistentVolume {
	src := c.Spec.Source.VolumeHandle
	if src == nil {
		return nil
	}
	for _, pv := range s.Volumes {
		if csi := pv.Spec.CSI; csi != nil && csi.Driver == c.Spec.Driver && csi.VolumeHandle == *src {
			return pv
		}
	}
	return nil
}

func (b Backend) holdsSnapshot(id string) bool {
	return slices.ContainsFunc(b.Snapshots, func(snap BackendSnapshot) bool { return snap.ID == id })
}

func missingSnapshotFinding(s *Snapshot, c *snapv1.VolumeSnapshotContent, handle string) Finding {
	f := Finding{Kind: KindMissingBackendSnapshot, Severity: SeverityProblem, Object: contentObject(c)}
	ref := c.Spec.VolumeSnapshotRef
	vs := s.snapshotOf(c)
	if vs == nil {
		f.Problem = fmt.Sprintf("It is ready to use, yet driver %s no longer has its backend snapshot %s: its data is lost, and a claim restored from it would fail.",
			c.Spec.Driver, handle)
		f.Fixes = []Fix{{Says: "see what it holds", Command: "volplane explain volumesnapshotcontent " + c.Name}}
		return f
	}
	f.Problem = fmt.Sprintf("It is ready to use, yet driver %s no longer has its backend snapshot %s: the data of VolumeSnapshot %s/%s is lost, and every claim restored from it fails (the driver answers that the snapshot does not exist).",
		c.Spec.Driver, handle, ref.Namespace, ref.Name)
	if claims := restoringClaims(s, vs); len(claims) > 0 {
		f.Problem += fmt.Sprintf(" Claims restoring from it now: %s.", claimKeys(claims))
	}
	f.Fixes = []Fix{explainSnapshot(vs)}
	if src := vs.Spec.Source.PersistentVolumeClaimName; src != nil && *src != "" {
		f.Fixes = append(f.Fixes, Fix{Says: fmt.Sprintf("take the snapshot of claim %s/%s again, and restore from the new one (this content is kept: it is the record VolumeSnapshot %s is bound to; its owner deletes that snapshot when no claim needs it)", vs.Namespace, *src, vs.Name),
			Command: retakeManifest(vs)})
	}
	return f
}

// retakeManifest is the command that takes a new VolumeSnapshot of the
// same claim and class as vs. Names come from the user's object: quoted.
func retakeManifest(vs *snapv1.VolumeSnapshot) string {
	var m strings.Builder
	m.WriteString("kubectl create -f - <<'EOF'\n")
	m.WriteString("apiVersion: snapshot.storage.k8s.io/v1\nkind: VolumeSnapshot\nmetadata:\n")
	fmt.Fprintf(&m, "  namespace: %s\n  generateName: %s\nspec:\n", quoted(vs.Namespace), quoted(vs.Name+"-"))
	if class := vs.Spec.VolumeSnapshotClassName; class != nil && *class != "" {
		fmt.Fprintf(&m, "  volumeSnapshotClassName: %s\n", quoted(*class))
	}
	fmt.Fprintf(&m, "  source:\n    persistentVolumeClaimName: %s\n", quoted(*vs.Spec.Source.PersistentVolumeClaimName))
	m.WriteString("EOF")
	return m.String()
}
