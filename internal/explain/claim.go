package explain

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	storagehelpers "k8s.io/component-helpers/storage/volume"

	"github.com/volplane/volplane/internal/binding"
)

// Claim explains claim from the facts. The claim need not be in f.Claims.
func Claim(claim *v1.PersistentVolumeClaim, f *Facts) ClaimReport {
	r := ClaimReport{Namespace: claim.Namespace, Name: claim.Name, Phase: string(claim.Status.Phase),
		Request: requestOf(claim)}
	if r.Phase == "" {
		r.Phase = string(v1.ClaimPending)
	}
	in := binding.ClaimInput{Claim: claim, Pods: f.PodsNaming(claim.Namespace, claim.Name),
		DefaultClass: binding.DefaultClass(f.Classes)}
	if name := binding.ClaimClass(claim); name != "" {
		in.Class = f.FindClass(name)
		r.Class = classOf(name, in.Class, f)
	}
	if claim.Spec.VolumeName != "" {
		in.Volume = f.FindVolume(claim.Spec.VolumeName)
	}
	if unbound(claim) {
		r.Volumes = considerVolumes(claim, in.Class, f, &in)
	}
	d := binding.DecideClaim(in)
	r.Next = d.Action.String()
	if d.Action == binding.ClaimBind && !bindPending(claim, d.Volume) {
		r.Next = binding.ClaimNone.String() // every bind step is done
	}
	r.Summary = claimSummary(claim, in, d, r.Class)
	r.SelectedNode = claim.Annotations[storagehelpers.AnnSelectedNode]
	if binding.DelayBinding(in.Class) && unbound(claim) && r.SelectedNode == "" {
		r.WaitingForPods = binding.UnscheduledPods(in.Pods)
		if r.PlacedDirectly = placedDirectly(claim, in.Pods); len(r.PlacedDirectly) > 0 && len(r.WaitingForPods) == 0 {
			r.Summary = placedSummary(r.PlacedDirectly)
		}
	}
	if claim.Status.Phase != v1.ClaimBound {
		r.Provisioning = provisioningOf(claim, f)
	}
	if in.Volume != nil {
		r.Volume = volumeOf(in.Volume)
		if binding.IsBoundToClaim(in.Volume, claim) {
			r.Nodes = nodeUses(in.Volume, in.Pods, f)
		}
	}
	r.Expansion = expansionOf(claim)
	r.Modification = modificationOf(claim)
	r.RestoresFrom = restoreOf(claim, f)
	r.Health = healthOf(claim, f)
	// Once the claim is the provisioner's, what it waits for is its source.
	if rs := r.RestoresFrom; rs != nil && unbound(claim) && claim.DeletionTimestamp == nil &&
		(handedTo(claim) != "" || d.Action == binding.ClaimProvision) &&
		(rs.State == RestoreWaiting || rs.State == RestoreRefused) {
		r.Summary = fmt.Sprintf("Restoring from %s: %s", rs.String(), lowerFirst(rs.Summary))
	}
	// A claim whose pods were placed directly is never scheduled: what the
	// nodes offer is not what holds it.
	if in.Match == nil && !leftToScheduler(in.Verdicts) && len(r.PlacedDirectly) == 0 {
		r.Capacity = capacityOf(claim, in.Class, f)
	}
	if s := noNodeHolds(claim, binding.ClaimClass(claim), r.Capacity); s != "" && r.SelectedNode == "" && claim.DeletionTimestamp == nil {
		r.Summary, r.NoNodeHolds = s, true
	}
	r.Deletion = claimDeletion(claim, f)
	if r.Deletion != nil {
		r.Summary = r.Deletion.Summary
	}
	return r
}

// unbound: the binder is still looking for a volume for the claim (the
// binder's waiting claims).
func unbound(claim *v1.PersistentVolumeClaim) bool {
	return claim.Spec.VolumeName == "" && !metav1.HasAnnotation(claim.ObjectMeta, storagehelpers.AnnBindCompleted)
}

// considerVolumes matches the claim against every volume, as the binder
// does, and fills in the match for the decision.
func considerVolumes(claim *v1.PersistentVolumeClaim, class *storagev1.StorageClass, f *Facts, in *binding.ClaimInput) *Considered {
	chosen, verdicts := binding.Match(claim, f.Volumes, binding.DelayBinding(class))
	if claim.DeletionTimestamp == nil {
		in.Match = chosen
	}
	in.Verdicts = verdicts
	c := &Considered{Tally: binding.Count(verdicts, chosen != nil, 0), Verdicts: verdictsOf(verdicts)}
	c.Summary = c.Tally.String()
	if chosen != nil {
		c.Chosen = chosen.Name
	}
	return c
}

func verdictsOf(vs []binding.Verdict) []Verdict {
	out := make([]Verdict, len(vs))
	for i, v := range vs {
		out[i] = verdictOf(v.PV, v)
	}
	return out
}

// verdictOf is binding's verdict about name (a volume, or from a volume's
// side a claim) for people.
func verdictOf(name string, v binding.Verdict) Verdict {
	return Verdict{Name: name, Reason: v.Reason, Why: v.Reason.Short(), Detail: v.Detail}
}

func requestOf(claim *v1.PersistentVolumeClaim) Request {
	size := claim.Spec.Resources.Requests[v1.ResourceStorage]
	r := Request{Storage: size.String(), VolumeMode: string(v1.PersistentVolumeFilesystem), VolumeName: claim.Spec.VolumeName}
	for _, m := range claim.Spec.AccessModes {
		r.AccessModes = append(r.AccessModes, string(m))
	}
	if claim.Spec.VolumeMode != nil {
		r.VolumeMode = string(*claim.Spec.VolumeMode)
	}
	if claim.Spec.Selector != nil {
		r.Selector = metav1.FormatLabelSelector(claim.Spec.Selector)
	}
	if claim.Spec.VolumeAttributesClassName != nil {
		r.AttributesClass = *claim.Spec.VolumeAttributesClassName
	}
	return r
}

func classOf(name string, class *storagev1.StorageClass, f *Facts) *Class {
	c := &Class{Name: name, Exists: class != nil}
	if class == nil {
		return c
	}
	c.BindingMode = string(storagev1.VolumeBindingImmediate)
	if class.VolumeBindingMode != nil {
		c.BindingMode = string(*class.VolumeBindingMode)
	}
	c.Provisioner = class.Provisioner
	if p, err := binding.ExternalProvisioner(class); err == nil {
		c.Provisioner = p
	}
	if p, ok := f.Provisioners[c.Provisioner]; ok {
		c.Serving = &p
	}
	return c
}

func volumeOf(pv *v1.PersistentVolume) *BoundVolume {
	capacity := binding.Capacity(pv)
	v := &BoundVolume{Name: pv.Name, Phase: string(pv.Status.Phase), Capacity: capacity.String(),
		ReclaimPolicy: string(pv.Spec.PersistentVolumeReclaimPolicy)}
	if pv.Spec.CSI != nil {
		v.Driver, v.Handle = pv.Spec.CSI.Driver, pv.Spec.CSI.VolumeHandle
	}
	return v
}

// provisioningOf reads the provisioning events of a claim that is, or was,
// handed to a provisioner.
func provisioningOf(claim *v1.PersistentVolumeClaim, f *Facts) *Provisioning {
	name := handedTo(claim)
	if name == "" {
		return nil
	}
	p := &Provisioning{Provisioner: name}
	var last *v1.Event
	for _, e := range eventsOn(f.Events, claim.UID) {
		switch e.Reason {
		case "Provisioning":
			p.Attempts += count(e)
		case "ProvisioningFailed":
			p.Failures += count(e)
			if last == nil || eventTime(e).After(eventTime(last)) {
				last = e
			}
		}
	}
	if last != nil {
		p.LastError = last.Message
	}
	return p
}

// handedTo is the provisioner the binder handed the claim to, "" if none.
func handedTo(claim *v1.PersistentVolumeClaim) string {
	if name := claim.Annotations[storagehelpers.AnnStorageProvisioner]; name != "" {
		return name
	}
	return claim.Annotations[storagehelpers.AnnBetaStorageProvisioner]
}

// claimSummary is the one sentence that says what the claim waits for.
func claimSummary(claim *v1.PersistentVolumeClaim, in binding.ClaimInput, d binding.ClaimDecision, class *Class) string {
	if metav1.HasAnnotation(claim.ObjectMeta, storagehelpers.AnnBindCompleted) {
		return boundSummary(claim, in.Volume, d)
	}
	switch d.Action {
	case binding.ClaimBind:
		return fmt.Sprintf("Volume %s fits; the binder binds it at its next sync of the claim.", d.Volume.Name)
	case binding.ClaimSetDefaultClass:
		return fmt.Sprintf("No volume fits and the claim names no class: the binder gives it the default class %s.", d.Class)
	case binding.ClaimProvision:
		return provisionSummary(d.Provisioner, class, claim.Annotations[storagehelpers.AnnSelectedNode])
	}
	if claim.Spec.VolumeName != "" && in.Volume == nil {
		return fmt.Sprintf("Waiting for volume %s, which the claim names and which does not exist.", claim.Spec.VolumeName)
	}
	if class != nil && class.Provisioner == noProvisioner && d.Action == binding.ClaimPending {
		return fmt.Sprintf("No volume fits, and class %s provisions none (%s): create a volume that fits.", class.Name, noProvisioner)
	}
	if len(d.Events) > 0 {
		return eventSentence(d.Events[0])
	}
	return Sentence("Waiting: " + d.Note)
}

// noProvisioner is the provisioner of classes for static volumes only.
const noProvisioner = "kubernetes.io/no-provisioner"

// provisionSummary says who the claim waits for, and whether anything
// serves that provisioner (on the selected node, for one deployed per node).
func provisionSummary(provisioner string, class *Class, node string) string {
	s := fmt.Sprintf("No volume fits; waiting for %s to provision one.", provisioner)
	if class == nil || class.Serving == nil {
		return s
	}
	p := class.Serving
	switch {
	case !p.Serving:
		return fmt.Sprintf("No volume fits, and nothing serves its provisioner %s.", provisioner)
	case node != "" && len(p.Nodes) > 0 && !slices.Contains(p.Nodes, node):
		return fmt.Sprintf("No volume fits, and %s is served on nodes %s but not on the selected node %s.",
			provisioner, strings.Join(p.Nodes, ", "), node)
	}
	return s
}

// eventSentence turns the binder's waiting event into the summary.
func eventSentence(e binding.Event) string {
	switch e.Reason {
	case binding.EventWaitForFirstConsumer:
		return "Waiting for a pod that uses the claim: its class binds on the first consumer."
	case binding.EventWaitForPodScheduled:
		return Sentence(e.Message + ": its class binds on the first consumer")
	case binding.EventFailedBinding:
		return Sentence("Waiting: " + strings.TrimSuffix(e.Message, "."))
	case binding.EventVolumeMismatch:
		return Sentence(e.Message)
	case binding.EventProvisioningFailed:
		return Sentence("Cannot provision a volume: " + e.Message)
	}
	return Sentence(e.Message)
}

func boundSummary(claim *v1.PersistentVolumeClaim, pv *v1.PersistentVolume, d binding.ClaimDecision) string {
	switch {
	case d.Action == binding.ClaimLost || claim.Status.Phase == v1.ClaimLost:
		if len(d.Events) > 0 {
			return Sentence("Lost: " + d.Events[0].Message)
		}
		return "Lost: the claim's volume is gone or belongs to another claim."
	case d.Action == binding.ClaimBind && bindPending(claim, pv):
		return fmt.Sprintf("Being bound to volume %s; the binder finishes at its next sync.", pv.Name)
	case len(d.Events) > 0:
		return eventSentence(d.Events[0])
	}
	capacity := binding.Capacity(pv)
	return fmt.Sprintf("Bound to volume %s (%s).", pv.Name, capacity.String())
}

// bindPending says whether one of the binder's four bind steps would
// still write (each returns nil when its object is already bound).
func bindPending(claim *v1.PersistentVolumeClaim, pv *v1.PersistentVolume) bool {
	return binding.BindVolumeSpec(pv, claim) != nil || binding.BindVolumeStatus(pv) != nil ||
		binding.BindClaimSpec(claim, pv) != nil || binding.BindClaimStatus(claim, pv) != nil
}

// lowerFirst is s with its first letter in lower case, to follow a colon.
func lowerFirst(s string) string {
	first, size := utf8.DecodeRuneInString(s)
	return string(unicode.ToLower(first)) + s[size:]
}

// Sentence capitalises s and ends it with a full stop (unless it ends
// with one, or with "!").
func Sentence(s string) string {
	s = strings.TrimSpace(s)
	if s == "" {
		return s
	}
	first, size := utf8.DecodeRuneInString(s)
	s = string(unicode.ToUpper(first)) + s[size:]
	if !strings.HasSuffix(s, ".") && !strings.HasSuffix(s, "!") {
		s += "."
	}
	return s
}
