package invariants

import (
	"fmt"
	"slices"

	groupv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	storagehelpers "k8s.io/component-helpers/storage/volume"

	"github.com/volplane/volplane/internal/snapshotapi"
)

// DeletedSnapshot is a VolumeSnapshot the test deleted.
type DeletedSnapshot struct {
	Namespace, Name string
	UID             types.UID
	// Content is its bound content then ("" if none yet), Snapshot the
	// backend snapshot (driver and snapshot handle) and Policy the
	// content's deletion policy.
	Content  string
	Snapshot Volume
	Policy   snapv1.DeletionPolicy
}

// snapshots are the promises of the snapshot API at rest, checked only
// when the State holds the snapshot objects (SnapshotsRead):
//   - every backend snapshot of a driver that lists its snapshots has a
//     content naming its handle (spec.source.snapshotHandle or
//     status.snapshotHandle, or a group content listing it as a member),
//     but for one that may be a content's being created (a content of that
//     driver carrying BeingCreated and no handle yet, or a group content
//     carrying GroupBeingCreated, made from the same source volume) and
//     those there before;
//   - every ready content of such a driver names a backend snapshot that is
//     there;
//   - a bound dynamic content of policy Delete whose snapshot is gone was
//     not left behind, and every snapshot the test deleted under Delete
//     left neither its content nor its backend snapshot;
//   - no claim was restored from a snapshot that was not ready
//     (restoredFromMissing);
//   - nothing of the snapshot API stays Terminating.
func snapshots(s State, e Expect) []string {
	if !s.SnapshotsRead {
		return nil
	}
	var out []string
	handles := map[Volume]bool{}
	creating := map[Volume]bool{} // source volumes of contents being created, by driver
	for _, c := range s.Contents {
		if h := ContentHandle(&c); h != "" {
			handles[Volume{c.Spec.Driver, h}] = true
		} else if _, ok := c.Annotations[snapshotapi.BeingCreated]; ok && c.Spec.Source.VolumeHandle != nil {
			creating[Volume{c.Spec.Driver, *c.Spec.Source.VolumeHandle}] = true
		}
	}
	groupNamed(s.GroupContents, handles, creating)
	earlier := map[Volume]bool{}
	for _, v := range e.Left.Snapshots {
		earlier[v] = true
	}
	held := map[Volume]bool{}
	lists := map[string]bool{}
	for _, b := range s.Backends {
		if !b.ListsSnapshots {
			continue
		}
		lists[b.Driver] = true
		for _, snap := range b.Snapshots {
			v := Volume{b.Driver, snap.ID}
			held[v] = true
			if handles[v] || earlier[v] || creating[Volume{b.Driver, snap.Source}] {
				continue
			}
			out = append(out, fmt.Sprintf("backend snapshot %s of %s%s (of volume %s) has no VolumeSnapshotContent", snap.ID, b.Driver, onNode(b.Node), snap.Source))
		}
	}
	live := map[types.UID]bool{}
	for _, vs := range s.Snapshots {
		live[vs.UID] = true
		if vs.DeletionTimestamp != nil {
			out = append(out, fmt.Sprintf("VolumeSnapshot %s/%s is still Terminating (finalizers %v)", vs.Namespace, vs.Name, vs.Finalizers))
		}
	}
	for _, c := range s.Contents {
		if c.DeletionTimestamp != nil {
			out = append(out, fmt.Sprintf("VolumeSnapshotContent %s is still Terminating (finalizers %v)", c.Name, c.Finalizers))
		}
		h := ContentHandle(&c)
		if ready(&c) && h != "" && lists[c.Spec.Driver] && !held[Volume{c.Spec.Driver, h}] {
			out = append(out, fmt.Sprintf("VolumeSnapshotContent %s is ready, yet its backend snapshot %s of %s is gone", c.Name, h, c.Spec.Driver))
		}
		ref := c.Spec.VolumeSnapshotRef
		if c.Spec.DeletionPolicy == snapv1.VolumeSnapshotContentDelete && ref.UID != "" && !live[ref.UID] &&
			c.Spec.Source.VolumeHandle != nil && c.DeletionTimestamp == nil {
			out = append(out, fmt.Sprintf("VolumeSnapshotContent %s (Delete): its snapshot %s/%s (uid %s) is gone, yet it was not deleted", c.Name, ref.Namespace, ref.Name, ref.UID))
		}
	}
	for _, d := range e.DeletedSnapshots {
		if d.Policy != snapv1.VolumeSnapshotContentDelete {
			continue
		}
		if d.Content != "" && slices.ContainsFunc(s.Contents, func(c snapv1.VolumeSnapshotContent) bool {
			return c.Name == d.Content && c.Spec.VolumeSnapshotRef.UID == d.UID
		}) {
			out = append(out, fmt.Sprintf("VolumeSnapshot %s/%s was deleted, yet its Delete content %s is still there", d.Namespace, d.Name, d.Content))
		}
		if d.Snapshot.Handle != "" && held[d.Snapshot] {
			out = append(out, fmt.Sprintf("VolumeSnapshot %s/%s was deleted, yet the backend snapshot %s of its Delete content %s is still there", d.Namespace, d.Name, d.Snapshot.Handle, d.Content))
		}
	}
	return append(out, restoredFromMissing(s)...)
}

// restoredFromMissing: a Bound claim whose dataSourceRef (else dataSource)
// names a VolumeSnapshot and whose PV a provisioner made for it (the PV
// carries pv.kubernetes.io/provisioned-by and its claimRef is the claim's
// UID) was restored from that snapshot, for the provisioner makes a
// volume from a snapshot only once it is bound, its content points back
// and both are ready. A PV records no source, so what can be checked from
// the objects is this: when a VolumeSnapshot of that name exists and was
// made before the PV (else it is a later one of the same name), it is
// bound to a content that exists, points back to it and is ready, and the
// PV is at least its restoreSize. A source snapshot deleted since cannot be
// checked: the objects no longer say what it was.
func restoredFromMissing(s State) []string {
	byName := pvsByName(s.PVs)
	var out []string
	for _, c := range s.Claims {
		ns, name, ok := SnapshotSource(&c)
		pv := byName[c.Spec.VolumeName]
		if !ok || c.Status.Phase != v1.ClaimBound || pv == nil || pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID != c.UID ||
			pv.Annotations[storagehelpers.AnnDynamicallyProvisioned] == "" {
			continue
		}
		i := slices.IndexFunc(s.Snapshots, func(vs snapv1.VolumeSnapshot) bool { return vs.Namespace == ns && vs.Name == name })
		if i < 0 || s.Snapshots[i].CreationTimestamp.After(pv.CreationTimestamp.Time) {
			continue
		}
		vs := &s.Snapshots[i]
		key := c.Namespace + "/" + c.Name
		if why := notRestorable(vs, s.Contents); why != "" {
			out = append(out, fmt.Sprintf("claim %s was restored from VolumeSnapshot %s/%s, which %s", key, ns, name, why))
			continue
		}
		if size := vs.Status.RestoreSize; size != nil {
			have := pv.Spec.Capacity[v1.ResourceStorage]
			if have.Cmp(*size) < 0 {
				out = append(out, fmt.Sprintf("claim %s was restored from VolumeSnapshot %s/%s into PV %s of %s, smaller than its restoreSize %s",
					key, ns, name, pv.Name, have.String(), size.String()))
			}
		}
	}
	return out
}

// notRestorable says why a claim may not have been restored from vs, ""
// when it may.
func notRestorable(vs *snapv1.VolumeSnapshot, contents []snapv1.VolumeSnapshotContent) string {
	st := vs.Status
	if st == nil || st.BoundVolumeSnapshotContentName == nil || *st.BoundVolumeSnapshotContentName == "" {
		return "is bound to no content"
	}
	i := slices.IndexFunc(contents, func(c snapv1.VolumeSnapshotContent) bool { return c.Name == *st.BoundVolumeSnapshotContentName })
	switch {
	case i < 0:
		return "is bound to content " + *st.BoundVolumeSnapshotContentName + ", which does not exist"
	case contents[i].Spec.VolumeSnapshotRef.UID != vs.UID:
		return "is bound to content " + contents[i].Name + ", which does not point back to it"
	case st.ReadyToUse == nil || !*st.ReadyToUse || !ready(&contents[i]):
		return "is not ready"
	}
	return ""
}

// ContentHandle is the backend snapshot a content names: its
// status.snapshotHandle, else (pre-provisioned) spec.source.snapshotHandle;
// "" for none.
func ContentHandle(c *snapv1.VolumeSnapshotContent) string {
	if c.Status != nil && c.Status.SnapshotHandle != nil && *c.Status.SnapshotHandle != "" {
		return *c.Status.SnapshotHandle
	}
	if c.Spec.Source.SnapshotHandle != nil {
		return *c.Spec.Source.SnapshotHandle
	}
	return ""
}

func ready(c *snapv1.VolumeSnapshotContent) bool {
	return c.Status != nil && c.Status.ReadyToUse != nil && *c.Status.ReadyToUse
}

// SnapshotSource is the VolumeSnapshot a claim restores from: its
// dataSourceRef (whose namespace, when set, may differ: a cross-namespace
// source), else its dataSource; false when it names none.
func SnapshotSource(c *v1.PersistentVolumeClaim) (namespace, name string, ok bool) {
	if ref := c.Spec.DataSourceRef; ref != nil {
		if ref.Kind != snapshotapi.KindSnapshot || ref.APIGroup == nil || *ref.APIGroup != snapshotapi.Group {
			return "", "", false
		}
		ns := c.Namespace
		if ref.Namespace != nil && *ref.Namespace != "" {
			ns = *ref.Namespace
		}
		return ns, ref.Name, true
	}
	if ds := c.Spec.DataSource; ds != nil && ds.Kind == snapshotapi.KindSnapshot && ds.APIGroup != nil && *ds.APIGroup == snapshotapi.Group {
		return c.Namespace, ds.Name, true
	}
	return "", "", false
}

// BackendSnapshot is one snapshot a driver lists: its ID and the volume
// it was taken of.
type BackendSnapshot struct {
	ID, Source string
	// Size is its size in bytes (0: not reported).
	Size int64
}

// groupNamed adds to named the member snapshot handles every group content
// lists (a member is the group's to delete), and to creating the source
// volumes of each group content being created.
func groupNamed(groups []groupv1.VolumeGroupSnapshotContent, named, creating map[Volume]bool) {
	for _, g := range groups {
		if g.Status != nil {
			for _, m := range g.Status.VolumeSnapshotInfoList {
				if m.SnapshotHandle != "" {
					named[Volume{g.Spec.Driver, m.SnapshotHandle}] = true
				}
			}
		}
		if _, ok := g.Annotations[snapshotapi.GroupBeingCreated]; ok {
			for _, h := range g.Spec.Source.VolumeHandles {
				creating[Volume{g.Spec.Driver, h}] = true
			}
		}
	}
}
