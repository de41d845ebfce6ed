package mounting

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/volplane/volplane/internal/attachment"
)

// disk indexes what World found on disk.
type disk struct {
	staged    map[volumeKey]Staged
	published map[publicationKey]Published
	pubsOf    map[volumeKey]int // publications per volume
	pubsIn    map[types.UID]int // publications per pod
}

func index(w World) *disk {
	d := &disk{staged: map[volumeKey]Staged{}, published: map[publicationKey]Published{},
		pubsOf: map[volumeKey]int{}, pubsIn: map[types.UID]int{}}
	for _, s := range w.Staged {
		d.staged[s.key()] = s
	}
	for _, p := range w.Published {
		d.published[p.pubKey()] = p
		d.pubsOf[p.key()]++
		d.pubsIn[p.PodUID]++
	}
	return d
}

// Decide returns the node's plan. It is a pure function of w.
func Decide(w World) Plan {
	d := index(w)
	var plan Plan
	live := map[types.UID]bool{}
	wanted := map[volumeKey]bool{}
	inUse := map[corev1.UniqueVolumeName]bool{}
	for _, pod := range w.Pods {
		if !isLive(pod) {
			continue
		}
		live[pod.UID] = true
		pp := w.podPlan(pod, d)
		for _, s := range pp.Steps {
			if v := s.Volume; v != nil {
				wanted[volumeKey{v.Driver, v.Handle}] = true
				if v.Attachable {
					inUse[v.Unique] = true
				}
			}
		}
		plan.Pods = append(plan.Pods, pp)
	}
	w.teardown(&plan, d, live, wanted)
	w.stillInUse(inUse)
	plan.VolumesInUse = sortedNames(inUse)
	plan.Node = w.nodeAction(plan.VolumesInUse)
	plan.Finish = w.finished(d, live)
	return plan
}

// teardown lists the publications of pods that are not live, the stagings
// nothing needs any more (only once no publication of the volume is left on
// disk: unpublish comes first), and the directories of pods that are not
// live with nothing published in them.
func (w World) teardown(plan *Plan, d *disk, live map[types.UID]bool, wanted map[volumeKey]bool) {
	for _, p := range w.Published {
		if !live[p.PodUID] {
			plan.Unpublish = append(plan.Unpublish, p)
		}
	}
	for _, s := range w.Staged {
		if !wanted[s.key()] && d.pubsOf[s.key()] == 0 {
			plan.Unstage = append(plan.Unstage, s)
		}
	}
	for _, uid := range w.PodDirs {
		if !live[uid] && d.pubsIn[uid] == 0 {
			plan.RemovePodDirs = append(plan.RemovePodDirs, uid)
		}
	}
}

// stillInUse adds the attachable volumes still staged or published here:
// they stay in use until they are torn down, so that no detach happens
// under a mount.
func (w World) stillInUse(inUse map[corev1.UniqueVolumeName]bool) {
	add := func(driver, handle string) {
		if w.attachable(driver) {
			inUse[attachment.UniqueVolumeName(driver, handle)] = true
		}
	}
	for _, s := range w.Staged {
		add(s.Driver, s.Handle)
	}
	for _, p := range w.Published {
		if !p.Inline {
			add(p.Driver, p.Handle)
		}
	}
}

// finished lists the pods being deleted whose volumes are torn down:
// nothing of theirs is published (or half-published) on the node. That is
// the kubelet's rule (podVolumesExist, before its status manager lets the
// pod go): the pod's directory, the unstage of its volumes and the drop
// from volumesInUse may all still follow the pod's deletion; the
// attach/detach controller detaches nothing the node still reports in use.
func (w World) finished(d *disk, live map[types.UID]bool) []*corev1.Pod {
	if !w.Registered {
		return nil
	}
	var out []*corev1.Pod
	for _, pod := range w.Pods {
		if pod.DeletionTimestamp == nil || live[pod.UID] || d.pubsIn[pod.UID] > 0 {
			continue
		}
		out = append(out, pod)
	}
	return out
}

func sortedNames(set map[corev1.UniqueVolumeName]bool) []corev1.UniqueVolumeName {
	out := make([]corev1.UniqueVolumeName, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}
