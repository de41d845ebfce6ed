package explain

import (
	"fmt"
	"strings"
	"time"

	vgsv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"

	"github.com/volplane/volplane/internal/grouping"
)

// groupSummary says why a group is not ready, from the group loop's next
// step (plan) and, once that loop has nothing to do, the snapshotter's.
func groupSummary(gf grouping.GroupFacts, plan grouping.Plan, r *GroupReport) string {
	made := 0
	for _, m := range r.Members {
		if m.Exists {
			made++
		}
	}
	c := r.Content
	switch plan.Step {
	case grouping.Fail:
		if len(plan.Events) > 0 {
			return Sentence(fmt.Sprintf("Not ready: %s (%s)", strings.TrimSuffix(plan.Events[0].Message, "."), plan.Events[0].Reason))
		}
	case grouping.SetClass:
		return fmt.Sprintf("Not ready: the group snapshot loop gives it its driver's default class %s at its next sync (is it running?).", plan.Class)
	case grouping.AddFinalizer:
		return "Not ready: the group snapshot loop adds its finalizer at its next sync (is it running?)."
	case grouping.CreateContent:
		return fmt.Sprintf("Not ready: waiting for the group snapshot loop to create its content %s (is it running?).", c.Name)
	case grouping.BindContent:
		return fmt.Sprintf("Not ready: waiting for the group snapshot loop to bind its pre-provisioned content %s.", c.Name)
	case grouping.CreateMember, grouping.CreateMemberContent, grouping.SetMemberContentStatus, grouping.BindMember:
		return fmt.Sprintf("Not ready: driver %s has taken group snapshot %s; waiting for the group snapshot loop to make its members (%d of %d made).",
			c.Driver, orNone(c.Handle), made, len(r.Members))
	case grouping.UpdateStatus:
		// The loop copies the content's status as it is: what the group
		// waits for is the content's.
		if c.Ready {
			return fmt.Sprintf("Not ready: its content %s is ready; the group snapshot loop copies its status at its next sync (is it running?).", c.Name)
		}
	case grouping.Wait:
		if plan.Err != nil {
			return Sentence("Not ready: " + strings.TrimSuffix(plan.Err.Error(), "."))
		}
	}
	switch {
	case r.Ready:
		return fmt.Sprintf("Ready: group snapshot %s of %s, %s.", orNone(c.Handle), c.Driver, plural(len(r.Members), "member"))
	case r.Error != "":
		return Sentence("Not ready: " + strings.TrimSuffix(r.Error, "."))
	case gf.Content != nil:
		return Sentence("Not ready: " + contentNext(gf.Content, c, gf.Classes, gf.Now))
	}
	return "Not ready: waiting for the group snapshot loop (is it running?)."
}

// contentNext is the snapshotter's next step for a group content, as a
// clause for a sentence (grouping.DecideContent).
func contentNext(content *vgsv1.VolumeGroupSnapshotContent, c *GroupContentReport, classes []*vgsv1.VolumeGroupSnapshotClass, now time.Time) string {
	var class *vgsv1.VolumeGroupSnapshotClass
	if n := content.Spec.VolumeGroupSnapshotClassName; n != nil {
		class = grouping.ClassNamed(classes, *n)
	}
	p := grouping.DecideContent(content, class, now)
	switch p.Step {
	case grouping.MarkCreating, grouping.Create:
		s := fmt.Sprintf("the snapshotter of %s is taking the group snapshot (CreateVolumeGroupSnapshot)", c.Driver)
		if !c.BeingCreated || c.Snapshotter == nil || !c.Snapshotter.Serving {
			s = "waiting for the snapshotter to take it (CreateVolumeGroupSnapshot): " + snapshotterNote(c.Driver, c.Snapshotter)
		}
		return s
	case grouping.Get:
		return fmt.Sprintf("waiting for the snapshotter of %s to check pre-provisioned group snapshot %s (GetVolumeGroupSnapshot): %s",
			c.Driver, orNone(c.Handle), snapshotterNote(c.Driver, c.Snapshotter))
	case grouping.Delete:
		return fmt.Sprintf("the snapshotter of %s must delete group snapshot %s (DeleteVolumeGroupSnapshot): %s", c.Driver, orNone(c.Handle),
			snapshotterNote(c.Driver, c.Snapshotter))
	case grouping.RemoveContentFinalizer:
		return fmt.Sprintf("the snapshotter of %s removes the content's finalizer at its next sync (is it running?)", c.Driver)
	case grouping.FailContent:
		if len(p.Events) > 0 {
			return "the snapshotter fails: " + p.Events[0].Message
		}
	case grouping.UnmarkCreating:
		return fmt.Sprintf("the snapshotter of %s removes the being-created mark at its next sync", c.Driver)
	}
	switch {
	case p.Err != nil:
		return "waiting for the snapshotter: " + p.Err.Error()
	case c.Ready:
		return fmt.Sprintf("its content %s is ready", c.Name)
	case c.Handle != "":
		return fmt.Sprintf("driver %s has taken group snapshot %s and reports it not ready yet", c.Driver, c.Handle)
	}
	return "waiting for the snapshotter: " + snapshotterNote(c.Driver, c.Snapshotter)
}

// groupDeletion says what holds a group being deleted: the group loop's
// next step (grouping.DecideGroup), and once it waits for its content,
// the snapshotter's.
func groupDeletion(g *vgsv1.VolumeGroupSnapshot, gf grouping.GroupFacts, plan grouping.Plan, r *GroupReport) *Deletion {
	d := &Deletion{Since: g.DeletionTimestamp.UTC().Format(time.RFC3339), Finalizers: g.Finalizers}
	c := r.Content
	var why string
	switch plan.Step {
	case grouping.Wait:
		switch {
		case len(plan.Events) > 0:
			for _, m := range r.Members {
				d.HeldBy = append(d.HeldBy, restoringClaimsOf(gf, m.Snapshot)...)
			}
			why = fmt.Sprintf("%s (%s)", strings.TrimSuffix(plan.Events[0].Message, "."), plan.Events[0].Reason)
		case len(g.Finalizers) == 0:
			why = ""
		case gf.Content != nil && c.Exists:
			d.HeldBy = append(d.HeldBy, "volumegroupsnapshotcontent/"+c.Name)
			why = fmt.Sprintf("it waits for its content %s (%s): %s", c.Name, c.DeletionPolicy, contentNext(gf.Content, c, gf.Classes, gf.Now))
		default:
			why = strings.Join(g.Finalizers, ", ") + " is still set"
		}
	case grouping.MarkContent:
		why = fmt.Sprintf("the group snapshot loop marks its content %s as being deleted at its next sync (is it running?)", c.Name)
	case grouping.DeleteContent:
		d.HeldBy = append(d.HeldBy, "volumegroupsnapshotcontent/"+c.Name)
		why = fmt.Sprintf("the group snapshot loop deletes its content %s (Delete) at its next sync (is it running?)", c.Name)
	case grouping.DeleteMember:
		d.HeldBy = append(d.HeldBy, "volumesnapshot/"+g.Namespace+"/"+plan.Snapshot.Name)
		why = fmt.Sprintf("the group snapshot loop deletes its member %s at its next sync (is it running?)", plan.Snapshot.Name)
	case grouping.RemoveFinalizer:
		why = "nothing holds it any more: the group snapshot loop removes its finalizer at its next sync (is it running?)"
	default:
		why = fmt.Sprintf("the group snapshot loop's next step is %s", plan.Step)
	}
	if why == "" {
		d.Summary = "Being deleted; no finalizer holds it, the API server removes it."
	} else {
		d.Summary = Sentence("Being deleted; " + why)
	}
	return d
}

// restoringClaimsOf are the Pending claims of the group's namespace that
// restore from its member snapshot name, "pvc/namespace/name".
func restoringClaimsOf(gf grouping.GroupFacts, snapshot string) []string {
	vs := gf.Snapshots[snapshot]
	if vs == nil {
		return nil
	}
	var out []string
	for _, c := range gf.Claims {
		if name, ok := SnapshotToRead(c); ok && name == vs.Name && c.Namespace == vs.Namespace && c.Spec.VolumeName == "" {
			out = append(out, "pvc/"+c.Namespace+"/"+c.Name)
		}
	}
	return out
}

// GroupContent explains one VolumeGroupSnapshotContent.
func GroupContent(c *vgsv1.VolumeGroupSnapshotContent, f *Facts) GroupContentReport {
	r := *groupContentOf(c.Name, c, f)
	r.Finalizers = finalizersOf("vgsc "+c.Name, c.Finalizers)
	ref := c.Spec.VolumeGroupSnapshotRef
	switch {
	case c.DeletionTimestamp != nil:
		r.Deletion = &Deletion{Since: c.DeletionTimestamp.UTC().Format(time.RFC3339), Finalizers: c.Finalizers}
		if len(c.Finalizers) == 0 {
			r.Deletion.Summary = "Being deleted; no finalizer holds it, the API server removes it."
		} else if g := f.FindGroup(ref.Namespace, ref.Name); g != nil && g.UID == ref.UID && g.DeletionTimestamp == nil {
			r.Deletion.HeldBy = []string{"volumegroupsnapshot/" + ref.Namespace + "/" + ref.Name}
			r.Deletion.Summary = fmt.Sprintf("Being deleted; its group snapshot %s/%s still uses it, which keeps it.", ref.Namespace, ref.Name)
		} else {
			r.Deletion.Summary = Sentence("Being deleted; " + contentNext(c, &r, f.GroupClasses, f.Now))
		}
		r.Summary = r.Deletion.Summary
	case r.GroupState == "Missing" && c.Spec.DeletionPolicy == snapv1.VolumeSnapshotContentDelete:
		r.Summary = fmt.Sprintf("Its group snapshot %s is gone, yet nothing deletes it (policy Delete): the group snapshot loop never deletes a content whose group is merely gone. Delete it if its data is not wanted, or switch it to Retain.", r.Group)
	case r.GroupState == "Missing":
		r.Summary = fmt.Sprintf("Its group snapshot %s is gone; policy Retain keeps it and backend group snapshot %s until you act.", r.Group, orNone(r.Handle))
	case r.GroupState == "Waiting":
		r.Summary = fmt.Sprintf("Pre-provisioned for group snapshot %s, which does not exist yet or is not bound.", r.Group)
	case r.GroupState == "Replaced":
		r.Summary = fmt.Sprintf("Bound to an earlier group snapshot of the name %s, which was replaced: the new one does not use it.", r.Group)
	case r.Error != "":
		r.Summary = Sentence("The driver failed: " + strings.TrimSuffix(r.Error, "."))
	case r.Ready:
		r.Summary = fmt.Sprintf("Ready: group snapshot %s of %s, bound to %s, %s.", r.Handle, r.Driver, r.Group, plural(len(r.Members), "member"))
	default:
		r.Summary = Sentence(contentNext(c, &r, f.GroupClasses, f.Now))
	}
	return r
}
