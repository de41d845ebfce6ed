package explain

import (
	"fmt"
	"slices"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	storagehelpers "k8s.io/component-helpers/storage/volume"

	"github.com/volplane/volplane/internal/attachment"
	"github.com/volplane/volplane/internal/binding"
	"github.com/volplane/volplane/internal/protection"
)

// Volume explains pv from the facts.
func Volume(pv *v1.PersistentVolume, f *Facts) VolumeReport {
	capacity := binding.Capacity(pv)
	r := VolumeReport{Name: pv.Name, Phase: string(pv.Status.Phase), Capacity: capacity.String(),
		VolumeMode: string(binding.VolumeMode(pv)), Class: binding.VolumeClass(pv),
		ReclaimPolicy: string(pv.Spec.PersistentVolumeReclaimPolicy)}
	for _, m := range pv.Spec.AccessModes {
		r.AccessModes = append(r.AccessModes, string(m))
	}
	if pv.Spec.CSI != nil {
		r.Driver, r.Handle = pv.Spec.CSI.Driver, pv.Spec.CSI.VolumeHandle
	}
	in := binding.VolumeInput{Volume: pv, LiveChecked: true}
	if ref := pv.Spec.ClaimRef; ref != nil {
		r.ClaimRef = binding.ClaimRefKey(ref)
		in.Claim = f.FindClaim(ref.Namespace, ref.Name)
		in.Pods = f.PodsNaming(ref.Namespace, ref.Name)
		r.ClaimState = claimState(pv, in.Claim)
	}
	d := binding.DecideVolume(in)
	r.Next = d.Action.String()
	if d.Reclaim != binding.ReclaimNone {
		r.Reclaim = d.Reclaim.String()
	}
	if d.Reclaim == binding.ReclaimExternal {
		if p, ok := f.Provisioners[VolumeProvisioner(pv)]; ok {
			r.Provisioner = &p
		}
	}
	if pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID == "" {
		r.Claims = considerClaims(pv, f)
	}
	if r.ClaimState == "Bound" {
		r.Nodes = nodeUses(pv, in.Pods, f)
	}
	r.Summary = volumeSummary(pv, d, &r)
	if r.Deletion = volumeDeletion(pv, f); r.Deletion != nil {
		r.Summary = r.Deletion.Summary
	}
	return r
}

// claimState names what became of the claim the volume points at.
func claimState(pv *v1.PersistentVolume, claim *v1.PersistentVolumeClaim) string {
	ref := pv.Spec.ClaimRef
	switch {
	case claim == nil && ref.UID == "":
		return "Waiting"
	case claim == nil:
		return "Missing"
	case ref.UID != "" && claim.UID != ref.UID:
		return "Replaced"
	case claim.Spec.VolumeName == pv.Name && claim.Status.Phase == v1.ClaimBound:
		return "Bound"
	}
	return "Binding"
}

// VolumeProvisioner is the provisioner a volume's report asks about: the
// one that deletes a released volume of policy Delete (the one that
// provisioned it, else its CSI driver); "" for none.
func VolumeProvisioner(pv *v1.PersistentVolume) string {
	if name := pv.Annotations[storagehelpers.AnnDynamicallyProvisioned]; name != "" {
		return name
	}
	if pv.Spec.CSI != nil {
		return pv.Spec.CSI.Driver
	}
	return ""
}

// considerClaims checks a free (or pre-bound) volume against every claim
// still looking for a volume, with the binder's own check.
func considerClaims(pv *v1.PersistentVolume, f *Facts) *Considered {
	c := &Considered{Verdicts: []Verdict{}}
	counts := map[binding.Reason]int{}
	for _, claim := range f.Claims {
		if !unbound(claim) || claim.DeletionTimestamp != nil {
			continue
		}
		c.Tally.Considered++
		_, vs := binding.Match(claim, []*v1.PersistentVolume{pv}, binding.DelayBinding(f.FindClass(binding.ClaimClass(claim))))
		key := binding.ClaimKey(claim)
		if len(vs) == 0 {
			c.Tally.Available++
			if c.Chosen == "" {
				c.Chosen = key
			}
			continue
		}
		counts[vs[0].Reason]++
		c.Verdicts = append(c.Verdicts, verdictOf(key, vs[0]))
	}
	c.Tally.Groups = binding.Groups(counts)
	slices.SortFunc(c.Verdicts, func(a, b Verdict) int { return strings.Compare(a.Name, b.Name) })
	c.Summary = claimsTally(c.Tally)
	return c
}

// claimsTally is a tally from a volume's side: "1/3 waiting claims fit: 2 too small".
func claimsTally(t binding.Tally) string {
	if t.Considered == 0 {
		return "no claim is waiting for a volume"
	}
	s := strings.Replace(t.String(), "volumes available", "waiting claims fit", 1)
	return strings.Replace(s, "volume available", "waiting claim fits", 1)
}

func volumeSummary(pv *v1.PersistentVolume, d binding.VolumeDecision, r *VolumeReport) string {
	switch {
	case pv.Status.Phase == v1.VolumePending || pv.Status.Phase == "":
		return "New: the binder has not marked it Available yet."
	case r.ClaimState == "Bound":
		return fmt.Sprintf("Bound to claim %s.", r.ClaimRef)
	case r.ClaimState == "Binding":
		return fmt.Sprintf("Being bound to claim %s; the binder finishes at its next sync.", r.ClaimRef)
	case r.ClaimState == "Waiting":
		return fmt.Sprintf("Reserved (pre-bound) for claim %s, which does not exist yet.", r.ClaimRef)
	case d.Reclaim != binding.ReclaimNone:
		return reclaimSummary(pv, d, r)
	case r.Claims != nil && r.Claims.Chosen != "":
		return fmt.Sprintf("Available; it fits the waiting claim %s, which the binder binds next.", r.Claims.Chosen)
	case r.Claims != nil:
		return Sentence("Available; " + r.Claims.Summary)
	}
	return Sentence(string(pv.Status.Phase) + ": " + d.Note)
}

// reclaimSummary says what the reclaim policy does next with a released
// volume (binding.DecideVolume's reclaim branch).
func reclaimSummary(pv *v1.PersistentVolume, d binding.VolumeDecision, r *VolumeReport) string {
	gone := fmt.Sprintf("Its claim %s is gone", r.ClaimRef)
	if r.ClaimState == "Replaced" {
		gone = fmt.Sprintf("Its claim %s was deleted (a new claim has the name)", r.ClaimRef)
	}
	switch d.Reclaim {
	case binding.ReclaimRetain:
		return gone + "; policy Retain keeps the volume and its data until you act: give it to one claim with " +
			"`volplane release pv " + pv.Name + " --to NAMESPACE/NAME`, or save or wipe the data and `volplane release pv " + pv.Name +
			"` gives it to any claim that fits (or delete the PV)."
	case binding.ReclaimExternal:
		s := gone + "; policy Delete: " + VolumeProvisioner(pv) + " deletes the backend volume, then the PV."
		if r.Provisioner != nil && !r.Provisioner.Serving {
			s += " " + Sentence(r.Provisioner.Note)
		}
		return s
	case binding.ReclaimMigrated:
		return gone + "; its CSI driver (migrated from " + pv.Annotations[storagehelpers.AnnMigratedTo] + ") reclaims it."
	case binding.ReclaimRecycle:
		return gone + "; policy Recycle: the binder scrubs it and makes it Available."
	case binding.ReclaimRecycleBlocked:
		return gone + "; policy Recycle waits: " + Sentence(d.Events[0].Message)
	}
	msg := pv.Status.Message
	if msg == "" {
		msg = d.Message
	}
	return gone + "; reclaim failed: " + Sentence(msg) + " Fix the cause, or delete the PV."
}

// volumeDeletion says what holds a volume being deleted.
func volumeDeletion(pv *v1.PersistentVolume, f *Facts) *Deletion {
	if pv.DeletionTimestamp == nil {
		return nil
	}
	d := &Deletion{Since: pv.DeletionTimestamp.UTC().Format(time.RFC3339), Finalizers: pv.Finalizers}
	var why []string
	for _, fin := range pv.Finalizers {
		switch {
		case fin == protection.VolumeFinalizer && protection.DecideVolume(pv).Action == protection.Keep:
			d.HeldBy = append(d.HeldBy, "pvc/"+pv.Spec.ClaimRef.Name)
			why = append(why, fmt.Sprintf("%s keeps it while it is Bound to %s", fin, binding.ClaimRefKey(pv.Spec.ClaimRef)))
		case fin == storagehelpers.PVDeletionProtectionFinalizer:
			why = append(why, fmt.Sprintf("%s deletes the backend volume first", VolumeProvisioner(pv)))
		case pv.Spec.CSI != nil && fin == attachment.Finalizer(pv.Spec.CSI.Driver):
			held := attachmentsOf(pv, f)
			d.HeldBy = append(d.HeldBy, held...)
			why = append(why, fmt.Sprintf("the attacher keeps it while %s exist", orNone(strings.Join(held, ", "))))
		default:
			why = append(why, fin+" is still set")
		}
	}
	if len(why) == 0 {
		d.Summary = "Being deleted; no finalizer holds it, the API server removes it."
	} else {
		d.Summary = Sentence("Being deleted; " + strings.Join(why, "; "))
	}
	return d
}

func attachmentsOf(pv *v1.PersistentVolume, f *Facts) []string {
	var out []string
	for _, va := range f.Attachments {
		if name := va.Spec.Source.PersistentVolumeName; name != nil && *name == pv.Name {
			out = append(out, "volumeattachment/"+va.Name)
		}
	}
	slices.Sort(out)
	return out
}
