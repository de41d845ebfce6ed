package invariants

import (
	"fmt"
	"slices"
	"sort"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
)

// A namespace user may change what is in their namespace, and nothing
// else: Outside cuts a State down to what the user of one namespace must
// not be able to touch, and Unchanged compares two such cuts, taken before
// and after what the user did. (The promises of Check still hold for the
// whole cluster: a leak inside the namespace is caught there.)

// Outside is the part of s that does not belong to namespace: the claims
// of other namespaces, the PVs not bound to a claim of namespace, the
// attachments of those PVs, and every backend volume but those of the PVs
// bound into namespace.
func Outside(s State, namespace string) State {
	var out State
	for _, c := range s.Claims {
		if c.Namespace != namespace {
			out.Claims = append(out.Claims, c)
		}
	}
	inside := map[Volume]bool{}
	kept := map[string]bool{}
	for _, pv := range s.PVs {
		if ref := pv.Spec.ClaimRef; ref != nil && ref.Namespace == namespace {
			if pv.Spec.CSI != nil {
				inside[Volume{pv.Spec.CSI.Driver, pv.Spec.CSI.VolumeHandle}] = true
			}
			continue
		}
		kept[pv.Name] = true
		out.PVs = append(out.PVs, pv)
	}
	for _, va := range s.Attachments {
		if src := va.Spec.Source.PersistentVolumeName; src != nil && kept[*src] {
			out.Attachments = append(out.Attachments, va)
		}
	}
	for _, b := range s.Backends {
		b.VolumeIDs = slices.DeleteFunc(slices.Clone(b.VolumeIDs), func(id string) bool { return inside[Volume{b.Driver, id}] })
		out.Backends = append(out.Backends, b)
	}
	return out
}

// Unchanged returns, one sentence each and sorted, what differs between
// two cuts of Outside: a claim or PV gone, come, or changed in what the
// user of the namespace could have an effect on (UID, phase, spec,
// annotations, finalizers, deletion), an attachment gone or come, a
// backend volume gone. A backend volume that came is not reported here
// (a volume with no PV is one of Check's).
func Unchanged(before, after State) []string {
	var out []string
	out = append(out, claimsUnchanged(before.Claims, after.Claims)...)
	out = append(out, pvsUnchanged(before.PVs, after.PVs)...)
	out = append(out, attachmentsUnchanged(before, after)...)
	out = append(out, volumesKept(before, after)...)
	sort.Strings(out)
	return out
}

func claimsUnchanged(before, after []v1.PersistentVolumeClaim) []string {
	byKey := func(cs []v1.PersistentVolumeClaim) map[string]*v1.PersistentVolumeClaim {
		m := make(map[string]*v1.PersistentVolumeClaim, len(cs))
		for i := range cs {
			m[cs[i].Namespace+"/"+cs[i].Name] = &cs[i]
		}
		return m
	}
	b, a := byKey(before), byKey(after)
	var out []string
	for key, was := range b {
		now := a[key]
		if now == nil {
			out = append(out, fmt.Sprintf("claim %s (uid %s, %s) is gone", key, was.UID, was.Status.Phase))
			continue
		}
		for _, d := range objectChanges(was.ObjectMeta.UID, now.UID, was.Annotations, now.Annotations, was.Finalizers, now.Finalizers,
			was.DeletionTimestamp != nil, now.DeletionTimestamp != nil) {
			out = append(out, "claim "+key+": "+d)
		}
		if was.Status.Phase != now.Status.Phase {
			out = append(out, fmt.Sprintf("claim %s: phase %s → %s", key, was.Status.Phase, now.Status.Phase))
		}
		if !apiequality.Semantic.DeepEqual(was.Spec, now.Spec) {
			out = append(out, fmt.Sprintf("claim %s: spec changed (volumeName %q → %q)", key, was.Spec.VolumeName, now.Spec.VolumeName))
		}
	}
	for key, now := range a {
		if b[key] == nil {
			out = append(out, fmt.Sprintf("claim %s (uid %s) appeared", key, now.UID))
		}
	}
	return out
}

func pvsUnchanged(before, after []v1.PersistentVolume) []string {
	b, a := pvsByName(before), pvsByName(after)
	var out []string
	for name, was := range b {
		now := a[name]
		if now == nil {
			out = append(out, fmt.Sprintf("PV %s (%s, claim %s) is gone", name, was.Status.Phase, refString(was.Spec.ClaimRef)))
			continue
		}
		for _, d := range objectChanges(was.UID, now.UID, was.Annotations, now.Annotations, was.Finalizers, now.Finalizers,
			was.DeletionTimestamp != nil, now.DeletionTimestamp != nil) {
			out = append(out, "PV "+name+": "+d)
		}
		if was.Status.Phase != now.Status.Phase {
			out = append(out, fmt.Sprintf("PV %s: phase %s → %s", name, was.Status.Phase, now.Status.Phase))
		}
		if !apiequality.Semantic.DeepEqual(was.Spec.ClaimRef, now.Spec.ClaimRef) {
			out = append(out, fmt.Sprintf("PV %s: claimRef %s → %s", name, refString(was.Spec.ClaimRef), refString(now.Spec.ClaimRef)))
		}
		if !apiequality.Semantic.DeepEqual(was.Spec, now.Spec) {
			out = append(out, fmt.Sprintf("PV %s: spec changed", name))
		}
	}
	for name, now := range a {
		if b[name] == nil {
			out = append(out, fmt.Sprintf("PV %s (claim %s) appeared", name, refString(now.Spec.ClaimRef)))
		}
	}
	return out
}

// objectChanges are the metadata differences that matter between two
// versions of one object (resourceVersion and managedFields never do).
func objectChanges[U comparable](wasUID, nowUID U, wasAnn, nowAnn map[string]string, wasFin, nowFin []string, wasDeleting, nowDeleting bool) []string {
	var out []string
	if wasUID != nowUID {
		out = append(out, fmt.Sprintf("uid %v → %v (deleted and made again)", wasUID, nowUID))
	}
	for k, v := range wasAnn {
		if nv, ok := nowAnn[k]; !ok || nv != v {
			out = append(out, fmt.Sprintf("annotation %s %q → %q", k, v, nv))
		}
	}
	for k, v := range nowAnn {
		if _, ok := wasAnn[k]; !ok {
			out = append(out, fmt.Sprintf("annotation %s %q added", k, v))
		}
	}
	if !slices.Equal(wasFin, nowFin) {
		out = append(out, fmt.Sprintf("finalizers %v → %v", wasFin, nowFin))
	}
	if !wasDeleting && nowDeleting {
		out = append(out, "being deleted")
	}
	return out
}

func attachmentsUnchanged(before, after State) []string {
	state := func(s State) map[string]bool {
		m := map[string]bool{}
		for _, va := range s.Attachments {
			m[va.Name] = va.Status.Attached
		}
		return m
	}
	b, a := state(before), state(after)
	var out []string
	for name, was := range b {
		now, ok := a[name]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("VolumeAttachment %s is gone", name))
		case now != was:
			out = append(out, fmt.Sprintf("VolumeAttachment %s: attached %t → %t", name, was, now))
		}
	}
	for name := range a {
		if _, ok := b[name]; !ok {
			out = append(out, fmt.Sprintf("VolumeAttachment %s appeared", name))
		}
	}
	return out
}

// volumesKept reports backend volumes of before that after no longer
// holds where before did.
func volumesKept(before, after State) []string {
	type at struct {
		vol  Volume
		node string
	}
	held := map[at]bool{}
	for _, b := range after.Backends {
		for _, id := range b.VolumeIDs {
			held[at{Volume{b.Driver, id}, b.Node}] = true
		}
	}
	var out []string
	for _, b := range before.Backends {
		for _, id := range b.VolumeIDs {
			if !held[at{Volume{b.Driver, id}, b.Node}] {
				out = append(out, fmt.Sprintf("backend volume %s of %s%s is gone", id, b.Driver, onNode(b.Node)))
			}
		}
	}
	return out
}
