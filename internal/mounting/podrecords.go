package mounting

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/types"
)

// PodRecords names the node's records one pod's plan reads (DecidePod),
// beyond the pod and its claims and volumes: a pod sync reads these and
// nothing else, so its cost does not grow with the pods of the node.
type PodRecords struct {
	// Stagings are the staging records of the pod's CSI persistent
	// volumes.
	Stagings []StagingRef
	// Attachments are the VolumeAttachment names of its attachable volumes
	// on this node.
	Attachments []string
	// AllPublications: one of its volumes may be used by one pod only
	// (ReadWriteOncePod), and whether another pod of the node published it
	// is read from every pod's publications; otherwise only the pod's own
	// are read.
	AllPublications bool
}

// StagingRef locates a volume's staging record (Layout.StagePaths).
type StagingRef struct {
	Driver, Handle, PV string
	Block              bool
}

// RecordsOf is what pod's plan reads from the node's records, given w's
// claims, volumes and CSI drivers (the records in w are not read).
func RecordsOf(w World, pod *corev1.Pod) PodRecords {
	var r PodRecords
	pp := w.podPlan(pod, index(World{}))
	for _, s := range pp.Steps {
		v := s.Volume
		if v == nil || v.Inline != nil {
			continue
		}
		r.Stagings = append(r.Stagings, StagingRef{Driver: v.Driver, Handle: v.Handle, PV: v.PV.Name, Block: v.Block})
		if v.Attachment != "" {
			r.Attachments = append(r.Attachments, v.Attachment)
		}
		if readWriteOncePodOnly(v.PV) {
			r.AllPublications = true
		}
	}
	return r
}

// readWriteOncePodOnly: the volume's only access mode is ReadWriteOncePod,
// which the mount checks against the other pods' publications.
func readWriteOncePodOnly(pv *corev1.PersistentVolume) bool {
	return slices.Equal(pv.Spec.AccessModes, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod})
}

// ForPod narrows a node's world to what pod's sync reads (RecordsOf): the
// pod alone, the stagings of its volumes, its own publications (every
// pod's, for a ReadWriteOncePod volume) and its volumes' attachments. It
// is the scope the node agent reads from disk for a pod sync, written
// once: DecidePod(w.ForPod(pod), pod) is Decide(w)'s plan for the pod.
func (w World) ForPod(pod *corev1.Pod) World {
	r := RecordsOf(w, pod)
	n := w
	n.Pods = []*corev1.Pod{pod}
	n.Staged, n.Published, n.PodDirs = nil, nil, nil
	n.Attachments = map[string]*storagev1.VolumeAttachment{}
	want := map[volumeKey]bool{}
	for _, s := range r.Stagings {
		want[volumeKey{s.Driver, s.Handle}] = true
	}
	for _, s := range w.Staged {
		if want[s.key()] {
			n.Staged = append(n.Staged, s)
		}
	}
	for _, p := range w.Published {
		if r.AllPublications || p.PodUID == pod.UID {
			n.Published = append(n.Published, p)
		}
	}
	if slices.Contains(w.PodDirs, pod.UID) {
		n.PodDirs = []types.UID{pod.UID}
	}
	for _, name := range r.Attachments {
		if va := w.Attachments[name]; va != nil {
			n.Attachments[name] = va
		}
	}
	return n
}
