package explain

import (
	"fmt"
	"slices"
	"strings"
	"time"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	coordinationv1 "k8s.io/api/coordination/v1"

	"github.com/volplane/volplane/internal/heartbeat"
	"github.com/volplane/volplane/internal/invariants"
	"github.com/volplane/volplane/internal/snapshotapi"
)

// finalizerMeanings are what each finalizer of the snapshot API protects
// and who removes it.
var finalizerMeanings = map[string][2]string{
	snapshotapi.AsSourceFinalizer: {"keeps the snapshot while a claim is being restored from it",
		"the snapshot loop, once it is being deleted and no Pending claim restores from it"},
	snapshotapi.ProvisionerSourceFinalizer: {"keeps the snapshot while the provisioner restores a claim from it",
		"the provisioner, once the restore is done"},
	snapshotapi.BoundFinalizer: {"keeps the snapshot while its content (policy Delete) exists",
		"the snapshot loop, once the content is deleted"},
	snapshotapi.InGroupFinalizer: {"keeps a member snapshot while its group snapshot exists",
		"the group snapshot loop, when the group is deleted"},
	snapshotapi.ContentFinalizer: {"keeps the content while its snapshot uses it, and until its backend snapshot is deleted (policy Delete)",
		"the snapshotter, after DeleteSnapshot (Delete) or at once (Retain), once the content is deleted"},
	snapshotapi.GroupBoundFinalizer: {"keeps the group snapshot while its content (policy Delete) and its members exist",
		"the group snapshot loop, once its content is deleted and its members are gone"},
	snapshotapi.GroupContentFinalizer: {"keeps the group content while its group uses it, and until its backend group snapshot is deleted (policy Delete)",
		"the snapshotter, after DeleteVolumeGroupSnapshot (Delete) or at once (Retain), once the content is deleted"},
}

// finalizersOf lists an object's finalizers with their meanings.
func finalizersOf(object string, finalizers []string) []FinalizerOn {
	var out []FinalizerOn
	for _, f := range finalizers {
		m, ok := finalizerMeanings[f]
		if !ok {
			m = [2]string{"not one of the snapshot API's", "the controller that added it"}
		}
		out = append(out, FinalizerOn{Object: object, Name: f, Meaning: m[0], RemovedBy: m[1]})
	}
	return out
}

// snapshotDeletion says what holds a snapshot being deleted.
func snapshotDeletion(vs *snapv1.VolumeSnapshot, r *SnapshotReport, f *Facts) *Deletion {
	d := &Deletion{Since: vs.DeletionTimestamp.UTC().Format(time.RFC3339), Finalizers: vs.Finalizers}
	var why []string
	for _, fin := range vs.Finalizers {
		switch fin {
		case snapshotapi.AsSourceFinalizer, snapshotapi.ProvisionerSourceFinalizer:
			if len(r.RestoredBy) > 0 {
				for _, c := range r.RestoredBy {
					d.HeldBy = append(d.HeldBy, "pvc/"+c)
				}
				why = append(why, fmt.Sprintf("%s keeps it while %s restore from it", short(fin), list(r.RestoredBy)))
			} else {
				why = append(why, fmt.Sprintf("%s: no Pending claim restores from it, %s removes it", short(fin), finalizerMeanings[fin][1]))
			}
		case snapshotapi.BoundFinalizer:
			c := r.Content
			switch {
			case c != nil && c.Exists:
				d.HeldBy = append(d.HeldBy, "volumesnapshotcontent/"+c.Name)
				why = append(why, fmt.Sprintf("%s keeps it until its content %s (%s) is deleted", short(fin), c.Name, c.DeletionPolicy))
			default:
				why = append(why, short(fin)+": its content is gone, the snapshot loop removes it at its next sync (is it running?)")
			}
		case snapshotapi.InGroupFinalizer:
			why = append(why, fmt.Sprintf("it is a member of group snapshot %s and goes with its group", orNone(r.Group)))
		default:
			why = append(why, short(fin)+" is still set")
		}
	}
	if c := r.Content; c != nil && c.Exists {
		if content := f.FindContent(c.Name); content != nil && content.DeletionTimestamp != nil && slices.Contains(content.Finalizers, snapshotapi.ContentFinalizer) {
			why = append(why, contentHold(content, c))
		}
	}
	if len(why) == 0 {
		d.Summary = "Being deleted; no finalizer holds it, the API server removes it."
	} else {
		d.Summary = Sentence("Being deleted; " + strings.Join(why, "; "))
	}
	return d
}

// short is a finalizer's name after its domain, as a sentence names it
// (the Finalizers list gives it in full).
func short(fin string) string {
	domain, name, ok := strings.Cut(fin, "/")
	switch {
	case !ok:
		return fin
	case domain == "provisioner.storage.kubernetes.io":
		return "the provisioner's " + name
	}
	return name
}

// contentHold says what holds a content's deletion on the snapshotter.
func contentHold(content *snapv1.VolumeSnapshotContent, c *ContentReport) string {
	handle := orNone(invariants.ContentHandle(content))
	switch {
	case c.BeingCreated:
		return fmt.Sprintf("its content %s waits for a CreateSnapshot of %s that may be in flight", c.Name, c.Driver)
	case c.DeletionPolicy == string(snapv1.VolumeSnapshotContentDelete):
		s := fmt.Sprintf("its content %s waits for the snapshotter of %s to delete backend snapshot %s", c.Name, c.Driver, handle)
		if c.Error != "" {
			s += " (last error: " + c.Error + ")"
		}
		return s
	}
	return fmt.Sprintf("its content %s (Retain) waits for the snapshotter of %s to let it go, keeping backend snapshot %s", c.Name, c.Driver, handle)
}

// Content explains one VolumeSnapshotContent.
func Content(c *snapv1.VolumeSnapshotContent, f *Facts) ContentReport {
	r := *contentOf(c.Name, c, f)
	r.Finalizers = finalizersOf("volumesnapshotcontent "+c.Name, c.Finalizers)
	ref := c.Spec.VolumeSnapshotRef
	switch {
	case c.DeletionTimestamp != nil:
		r.Deletion = &Deletion{Since: c.DeletionTimestamp.UTC().Format(time.RFC3339), Finalizers: c.Finalizers}
		if len(c.Finalizers) == 0 {
			r.Deletion.Summary = "Being deleted; no finalizer holds it, the API server removes it."
		} else if vs := f.FindSnapshot(ref.Namespace, ref.Name); vs != nil && vs.UID == ref.UID && vs.DeletionTimestamp == nil {
			r.Deletion.HeldBy = []string{"volumesnapshot/" + ref.Namespace + "/" + ref.Name}
			r.Deletion.Summary = fmt.Sprintf("Being deleted; its snapshot %s/%s still uses it, which keeps it.", ref.Namespace, ref.Name)
		} else {
			r.Deletion.Summary = Sentence("Being deleted; " + contentHold(c, &r))
		}
		r.Summary = r.Deletion.Summary
	case r.SnapshotState == "Missing" && c.Spec.DeletionPolicy == snapv1.VolumeSnapshotContentDelete:
		r.Summary = fmt.Sprintf("Its snapshot %s is gone, yet nothing deletes it (policy Delete): the snapshot loop never deletes a content whose snapshot is merely gone. Delete it if its data is not wanted, or switch it to Retain.", r.Snapshot)
	case r.SnapshotState == "Missing":
		r.Summary = fmt.Sprintf("Its snapshot %s is gone; policy Retain keeps it and backend snapshot %s until you act.", r.Snapshot, orNone(r.Handle))
	case r.SnapshotState == "Waiting":
		r.Summary = fmt.Sprintf("Pre-provisioned for snapshot %s, which does not exist yet or is not bound.", r.Snapshot)
	case r.Error != "":
		r.Summary = Sentence("The driver failed: " + strings.TrimSuffix(r.Error, "."))
	case r.Ready:
		r.Summary = fmt.Sprintf("Ready: backend snapshot %s of %s, bound to %s.", r.Handle, r.Driver, r.Snapshot)
	case r.BeingCreated && r.Handle == "":
		r.Summary = fmt.Sprintf("The snapshotter of %s is taking it (CreateSnapshot in flight).", r.Driver)
	case r.Handle == "":
		r.Summary = "Waiting for the snapshotter: " + servingNote(&r)
	default:
		r.Summary = fmt.Sprintf("Driver %s has taken snapshot %s and reports it not ready yet.", r.Driver, r.Handle)
	}
	return r
}

// SnapshotterPresence decides whether a snapshotter serves driver at now,
// from the snapshotter heartbeats of volplane (central or one per node)
// and the upstream csi-snapshotter's leader election Lease
// (SnapshotterLeaseName): heartbeat.Snapshotter.Find, which says who
// serves it and when it last reported, as for a provisioner.
func SnapshotterPresence(driver string, leases []coordinationv1.Lease, now time.Time) Provisioner {
	p := heartbeat.Snapshotter.Find(leases, driver, now)
	return Provisioner{Serving: p.Serving, Note: p.Reason, Nodes: p.Nodes}
}
