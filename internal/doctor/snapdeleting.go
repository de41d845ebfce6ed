package doctor

import (
	"fmt"
	"strings"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/internal/grouping"
	"github.com/volplane/volplane/internal/invariants"
	"github.com/volplane/volplane/internal/snapshotapi"
	"github.com/volplane/volplane/internal/snapshotbinding"
)

// stuckSnapshots: VolumeSnapshots and contents being deleted for longer
// than Thresholds.DeletingFor, with what holds each finalizer. A
// finalizer is offered for removal only when what it protects is no longer
// there (no claim restores from the snapshot, its content is gone, no
// snapshot uses the content); otherwise the fix is to end what holds it.
func stuckSnapshots(s *Snapshot, t Thresholds) []Finding {
	var out []Finding
	stuck := func(m *metav1.ObjectMeta) bool {
		return m.DeletionTimestamp != nil && len(m.Finalizers) > 0 && s.Now.Sub(m.DeletionTimestamp.Time) >= t.DeletingFor
	}
	for _, vs := range s.VolumeSnapshots {
		if stuck(&vs.ObjectMeta) {
			out = append(out, deletingFinding(s, snapshotObject(vs), &vs.ObjectMeta, func(f string) holder { return snapshotHolder(s, vs, f) }))
		}
	}
	for _, c := range s.Contents {
		if stuck(&c.ObjectMeta) {
			out = append(out, deletingFinding(s, contentObject(c), &c.ObjectMeta, func(f string) holder { return contentHolder(s, c, f) }))
		}
	}
	return out
}

func explainSnapshot(vs *snapv1.VolumeSnapshot) Fix {
	return Fix{Says: "see what the snapshot waits for", Command: "volplane explain volumesnapshot " + vs.Namespace + "/" + vs.Name}
}

func snapshotHolder(s *Snapshot, vs *snapv1.VolumeSnapshot, fin string) holder {
	remove := func(caveat string) Fix {
		return removeFinalizer("volumesnapshot", vs.Namespace, &vs.ObjectMeta, fin, caveat)
	}
	switch fin {
	case snapshotapi.AsSourceFinalizer, snapshotapi.ProvisionerSourceFinalizer:
		who := "the snapshot loop"
		if fin == snapshotapi.ProvisionerSourceFinalizer {
			who = "the provisioner"
		}
		if claims := restoringClaims(s, vs); len(claims) > 0 {
			var fixes []Fix
			for _, c := range claims {
				fixes = append(fixes, explainClaim(c))
			}
			return holder{says: fmt.Sprintf("%s keeps it while claims restore from it: %s", who, claimKeys(claims)), fixes: fixes}
		}
		return holder{says: fmt.Sprintf("no Pending claim restores from it, so %s should remove it (is it running?)", who),
			fixes: []Fix{remove("safe: no Pending claim restores from it")}}
	case snapshotapi.BoundFinalizer:
		name, c := s.boundContent(vs)
		switch {
		case name != "" && c != nil && c.DeletionTimestamp != nil:
			return holder{says: fmt.Sprintf("its content %s is being deleted (see that content's finalizers)", name),
				fixes: []Fix{explainSnapshot(vs)}}
		case name != "" && c != nil:
			return holder{says: fmt.Sprintf("the snapshot loop must first delete its content %s (policy %s; is it running?)", name, c.Spec.DeletionPolicy),
				fixes: []Fix{explainSnapshot(vs)}}
		}
		return holder{says: "its content is gone, so the snapshot loop should remove it (is it running?)",
			fixes: []Fix{remove("safe: its content no longer exists")}}
	case snapshotapi.InGroupFinalizer:
		// Only the group the member's owner reference names, by UID: a
		// group of the same name made since is another one, whose
		// deletion would take its own members' data.
		for _, g := range s.GroupSnapshots {
			if grouping.OwnedBy(vs, g) {
				return holder{says: fmt.Sprintf("it is a member of group snapshot %s: a member is deleted with its group, not alone", g.Name),
					fixes: []Fix{{Says: "delete the whole group snapshot, if none of its members is wanted",
						Risk:    "every member snapshot of the group is deleted, with their data under policy Delete",
						Command: fmt.Sprintf("kubectl delete volumegroupsnapshot -n %s %s", vs.Namespace, g.Name)}}}
			}
		}
		// The snapshot loop holds a member with no group owner reference
		// (pre-provisioned, not yet owned) while a group of the name it
		// reads lives (snapshotbinding.HeldBy), but no UID says that group
		// is this member's: never advised for deletion.
		if name := snapshotbinding.GroupOf(vs); name != "" {
			for _, g := range s.GroupSnapshots {
				if g.Namespace == vs.Namespace && snapshotbinding.HeldBy(vs, g.Name, g.UID) {
					return holder{says: fmt.Sprintf("group snapshot %s holds it by name, but no owner reference says that group is the one it was taken with", name),
						fixes: []Fix{explainSnapshot(vs)}}
				}
			}
		}
		return holder{says: "the group snapshot that owns it is gone, so the snapshot loop should let it go, with its content under policy Delete (is it running?)",
			fixes: []Fix{explainSnapshot(vs)}}
	}
	return otherHolder("volumesnapshot", vs.Namespace, &vs.ObjectMeta, fin)
}

func contentHolder(s *Snapshot, c *snapv1.VolumeSnapshotContent, fin string) holder {
	if fin != snapshotapi.ContentFinalizer {
		return otherHolder("volumesnapshotcontent", "", &c.ObjectMeta, fin)
	}
	handle := orUnknown(invariants.ContentHandle(c))
	explainIt := Fix{Says: "see the snapshotter's last error", Command: "volplane explain volumesnapshotcontent " + c.Name}
	if vs := s.snapshotOf(c); vs != nil && vs.DeletionTimestamp == nil {
		return holder{says: fmt.Sprintf("VolumeSnapshot %s/%s still uses it", vs.Namespace, vs.Name),
			fixes: []Fix{{Says: fmt.Sprintf("delete VolumeSnapshot %s/%s, if its data is no longer wanted", vs.Namespace, vs.Name),
				Risk:    deletionRisk(c, handle),
				Command: fmt.Sprintf("kubectl delete volumesnapshot -n %s %s", vs.Namespace, vs.Name)}}}
	}
	if _, ok := c.Annotations[snapshotapi.BeingCreated]; ok {
		return holder{says: fmt.Sprintf("a CreateSnapshot of driver %s may still be in flight (%s): the snapshotter deletes what it made first (is it running?)",
			c.Spec.Driver, snapshotapi.BeingCreated), fixes: []Fix{explainIt}}
	}
	if c.Spec.DeletionPolicy == snapv1.VolumeSnapshotContentRetain {
		return holder{says: fmt.Sprintf("policy Retain: the snapshotter of driver %s should remove it and keep backend snapshot %s (is it running?)", c.Spec.Driver, handle),
			fixes: []Fix{explainIt, removeFinalizer("volumesnapshotcontent", "", &c.ObjectMeta, fin,
				"policy Retain keeps backend snapshot "+handle+", which doctor then reports as orphaned")}}
	}
	return holder{says: fmt.Sprintf("the snapshotter of driver %s must first delete backend snapshot %s (is it running? does the driver fail?)", c.Spec.Driver, handle),
		fixes: []Fix{explainIt, removeFinalizer("volumesnapshotcontent", "", &c.ObjectMeta, fin,
			"leaves backend snapshot "+handle+" behind, which doctor then reports as orphaned")}}
}

// deletionRisk is what deleting a content's snapshot does to its data.
func deletionRisk(c *snapv1.VolumeSnapshotContent, handle string) string {
	if c.Spec.DeletionPolicy == snapv1.VolumeSnapshotContentDelete {
		return "policy Delete: backend snapshot " + handle + " and its data are deleted"
	}
	return ""
}

// snapshotClaimHolder is what holds a claim's finalizer of the snapshot
// API: a snapshot of it being made, or a clone of it being provisioned.
func snapshotClaimHolder(s *Snapshot, c *v1.PersistentVolumeClaim, fin string) (holder, bool) {
	switch fin {
	case snapshotapi.ClaimFinalizer:
		var making []string
		for _, vs := range s.VolumeSnapshots {
			src := vs.Spec.Source.PersistentVolumeClaimName
			if vs.Namespace == c.Namespace && src != nil && *src == c.Name && (vs.Status == nil || vs.Status.ReadyToUse == nil || !*vs.Status.ReadyToUse) &&
				vs.DeletionTimestamp == nil {
				making = append(making, vs.Name)
			}
		}
		if len(making) > 0 {
			return holder{says: "the snapshot loop keeps it while snapshots of it are being made: " + strings.Join(making, ", ")}, true
		}
		return holder{says: "no snapshot of it is being made, so the snapshot loop should remove it (is it running?)",
			fixes: []Fix{removeFinalizer("pvc", c.Namespace, &c.ObjectMeta, fin, "safe: no snapshot of it is being made")}}, true
	case snapshotapi.CloningFinalizer:
		var clones []*v1.PersistentVolumeClaim
		for _, o := range s.Claims {
			if o.Namespace == c.Namespace && o.Status.Phase != v1.ClaimBound && o.DeletionTimestamp == nil && clonesFrom(o, c.Name) {
				clones = append(clones, o)
			}
		}
		if len(clones) > 0 {
			return holder{says: "the provisioner keeps it while claims are cloned from it: " + claimKeys(clones)}, true
		}
		return holder{says: "no Pending claim is cloned from it, so the provisioner should remove it (is it running?)",
			fixes: []Fix{removeFinalizer("pvc", c.Namespace, &c.ObjectMeta, fin, "safe: no Pending claim is cloned from it")}}, true
	}
	return holder{}, false
}

// clonesFrom says whether the claim's data source is the claim name of
// its namespace.
func clonesFrom(c *v1.PersistentVolumeClaim, name string) bool {
	if ref := c.Spec.DataSourceRef; ref != nil {
		return ref.Kind == "PersistentVolumeClaim" && (ref.APIGroup == nil || *ref.APIGroup == "") && ref.Name == name &&
			(ref.Namespace == nil || *ref.Namespace == "" || *ref.Namespace == c.Namespace)
	}
	ds := c.Spec.DataSource
	return ds != nil && ds.Kind == "PersistentVolumeClaim" && (ds.APIGroup == nil || *ds.APIGroup == "") && ds.Name == name
}
