package attachment

import (
	"cmp"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A decision scoped to some volumes, from facts holding only what the
// loop reads for them, is the whole node's decision about those volumes,
// and leaves the node's other entries, timers and counts as they were:
// over random nodes (volumes two PVs may share, pods on both nodes,
// attachments in every state on both, status, timers, in-use lists).
func TestScopedDecisionIsTheWholeDecisionAboutItsVolumes(t *testing.T) {
	for seed := range uint64(3000) {
		rng := rand.New(rand.NewPCG(seed, 7))
		w, all := randomNode(rng)
		scope := map[v1.UniqueVolumeName]bool{}
		for _, u := range all {
			if rng.IntN(2) == 0 {
				scope[u] = true
			}
		}
		full := Decide(w.f)
		scoped := Decide(w.scoped(scope))
		if msg := sameAbout(w.f, scope, full, scoped); msg != "" {
			t.Fatalf("seed %d, scope %v: %s", seed, slices.Sorted(maps.Keys(scope)), msg)
		}
	}
}

// randomNode is node-1 with five volumes (pv-b names pv-a's backend
// volume, some allow many nodes), pods on node-1 and node-2 using one or
// two claims (some missing, some terminated), attachments of any state on
// both nodes, and a status that may or may not be current.
func randomNode(rng *rand.Rand) (*world, []v1.UniqueVolumeName) {
	w := newWorld()
	w.f.StatusInterval = DefaultStatusInterval
	w.f.UndesiredSince = map[string]time.Time{}
	if rng.IntN(2) == 0 {
		w.f.Status.WrittenAt = t0.Add(-time.Duration(rng.IntN(2500)) * time.Millisecond)
		w.f.Status.Streak = rng.IntN(maxStatusStreak + 1)
	}
	w.f.Node.Ready = rng.IntN(4) != 0
	w.f.Node.OutOfService = rng.IntN(8) == 0
	names := []string{"a", "b", "c", "d", "e"}
	for _, n := range names {
		var modes []v1.PersistentVolumeAccessMode
		if rng.IntN(3) == 0 {
			modes = []v1.PersistentVolumeAccessMode{v1.ReadWriteMany}
		}
		pv := w.volume(n, modes...)
		if n == "b" && rng.IntN(2) == 0 {
			pv.Spec.CSI.VolumeHandle = "h-a"
		}
	}
	claims := append(slices.Clone(names), "missing")
	for i := range 6 {
		on := []string{node, "node-2"}[rng.IntN(2)]
		use := []string{claims[rng.IntN(len(claims))]}
		if rng.IntN(2) == 0 {
			use = append(use, claims[rng.IntN(len(claims))])
		}
		pod := w.pod(fmt.Sprintf("p%d", i), on, use...)
		if rng.IntN(6) == 0 {
			pod.Status.Phase = v1.PodSucceeded
		}
	}
	var uniques []v1.UniqueVolumeName
	for _, n := range names {
		u, _ := VolumeOf(w.f.Volumes["pv-"+n])
		if !slices.Contains(uniques, u) {
			uniques = append(uniques, u)
		}
		for _, on := range []string{node, "node-2"} {
			if rng.IntN(3) != 0 {
				continue
			}
			va := w.attachment(n, on, rng.IntN(2) == 0)
			va.Spec.Source.PersistentVolumeName = new("pv-" + n)
			va.Name = Name(w.f.Volumes["pv-"+n].Spec.CSI.VolumeHandle, drv, on)
			switch rng.IntN(5) {
			case 0:
				va.DeletionTimestamp = &metav1.Time{Time: t0}
			case 1:
				va.Status.AttachError = &storagev1.VolumeError{Message: "no", Time: metav1.Time{Time: t0}}
			}
			if on == node && rng.IntN(2) == 0 {
				w.f.UndesiredSince[va.Name] = t0.Add(-time.Duration(rng.IntN(10)) * time.Minute)
			}
		}
		if rng.IntN(3) == 0 {
			w.f.Node.VolumesAttached = append(w.f.Node.VolumesAttached, v1.AttachedVolume{Name: u})
		}
		if rng.IntN(3) == 0 {
			w.f.Node.VolumesInUse = append(w.f.Node.VolumesInUse, u)
		}
	}
	slices.SortFunc(w.f.Node.VolumesAttached, func(a, b v1.AttachedVolume) int { return cmp.Compare(a.Name, b.Name) })
	w.f.Node.VolumesAttached = slices.CompactFunc(w.f.Node.VolumesAttached, func(a, b v1.AttachedVolume) bool { return a.Name == b.Name })
	return w, uniques
}

// scoped are the facts the loop reads for scope: the pods of the node
// using one of its volumes, the attachments of its volumes on any node.
func (w *world) scoped(scope map[v1.UniqueVolumeName]bool) Facts {
	f := w.f
	f.Scope = scope
	f.Pods, f.Attachments = nil, nil
	for _, pod := range w.f.Pods {
		for _, key := range podClaims(pod) {
			if c := w.f.Claims[key]; c != nil {
				if u, ok := VolumeOf(w.f.Volumes[c.Spec.VolumeName]); ok && scope[u] && !slices.Contains(f.Pods, pod) {
					f.Pods = append(f.Pods, pod)
				}
			}
		}
	}
	for _, va := range w.f.Attachments {
		if u, ok := VolumeOf(w.f.Volumes[*va.Spec.Source.PersistentVolumeName]); ok && scope[u] {
			f.Attachments = append(f.Attachments, va)
		}
	}
	return f
}

func podClaims(pod *v1.Pod) []string {
	var out []string
	for _, vol := range pod.Spec.Volumes {
		out = append(out, pod.Namespace+"/"+vol.PersistentVolumeClaim.ClaimName)
	}
	return out
}

// sameAbout compares the two plans: "" when scoped is full about the
// scope's volumes and the node's own about the others.
func sameAbout(f Facts, scope map[v1.UniqueVolumeName]bool, full, scoped Plan) string {
	in := func(u v1.UniqueVolumeName) bool { return scope[u] }
	creates := func(p Plan) (out []string) {
		for _, c := range p.Create {
			if in(c.Volume) {
				out = append(out, c.Attachment.Name)
			}
		}
		return out
	}
	detaches := func(p Plan) (out []string) {
		for _, d := range p.Detach {
			if in(d.Volume) {
				out = append(out, d.Attachment.Name+" "+d.Reason.String())
			}
		}
		return out
	}
	events := func(p Plan) (out []string) {
		for _, e := range p.Events {
			if in(e.Volume) {
				out = append(out, e.Key+" "+e.Message)
			}
		}
		slices.Sort(out)
		return out
	}
	var want []v1.AttachedVolume
	for _, a := range f.Node.VolumesAttached {
		if !in(a.Name) {
			want = append(want, a)
		}
	}
	for _, a := range full.VolumesAttached {
		if in(a.Name) {
			want = append(want, a)
		}
	}
	slices.SortFunc(want, func(a, b v1.AttachedVolume) int { return cmp.Compare(a.Name, b.Name) })
	counts := Counts{}
	for u, c := range full.Counts {
		if in(u) {
			counts[u] = c
		}
	}
	timers := map[string]time.Time{}
	inScopeKey := map[string]bool{}
	for u := range scope {
		d, h, _ := SplitUnique(u)
		inScopeKey[Name(h, d, node)] = true
	}
	for k, v := range f.UndesiredSince {
		if !inScopeKey[k] {
			timers[k] = v
		}
	}
	for k, v := range full.UndesiredSince {
		if inScopeKey[k] {
			timers[k] = v
		}
	}
	switch {
	case !slices.Equal(creates(full), creates(scoped)) || len(scoped.Create) != len(creates(scoped)):
		return fmt.Sprintf("creates %v, whole node's %v", creates(scoped), creates(full))
	case !slices.Equal(detaches(full), detaches(scoped)) || len(scoped.Detach) != len(detaches(scoped)):
		return fmt.Sprintf("detaches %v, whole node's %v", detaches(scoped), detaches(full))
	case !slices.Equal(events(full), events(scoped)) || len(scoped.Events) != len(events(scoped)):
		return fmt.Sprintf("events %v, whole node's %v", events(scoped), events(full))
	case !slices.Equal(want, scoped.VolumesAttached):
		return fmt.Sprintf("volumesAttached %v, want %v", scoped.VolumesAttached, want)
	case !maps.Equal(counts, scoped.Counts):
		return fmt.Sprintf("counts %v, want %v", scoped.Counts, counts)
	case !maps.Equal(timers, scoped.UndesiredSince):
		return fmt.Sprintf("timers %v, want %v", scoped.UndesiredSince, timers)
	case slices.ContainsFunc(scoped.Requeue, func(u v1.UniqueVolumeName) bool { return !in(u) }):
		return fmt.Sprintf("requeue %v outside the scope", scoped.Requeue)
	case slices.Equal(want, full.VolumesAttached) && (scoped.StatusChanged != full.StatusChanged || scoped.StatusDeferred != full.StatusDeferred):
		return fmt.Sprintf("status changed %v deferred %v, whole node's %v %v",
			scoped.StatusChanged, scoped.StatusDeferred, full.StatusChanged, full.StatusDeferred)
	}
	return ""
}
