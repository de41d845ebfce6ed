package attachment

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// FuzzDecide feeds Decide pods whose volumes name any claim (by name, or
// as a generic ephemeral volume of any pod and volume name: all of it
// written by namespace users), two claims of any names bound to two PVs
// that may name one backend volume, and attachments already on node-2.
// node-1 decides, its attachments are made, then node-2 decides: whatever
// the references, a volume that allows one node only is never attached to
// both, and nothing panics.
func FuzzDecide(f *testing.F) {
	f.Add("a", "b", "a", "b", "app", "data", uint8(0))
	f.Add("a", "b", "a", "b", "app", "data", uint8(1|4))
	f.Add("app-data", "b", "data", "b", "app", "data", uint8(8|16))
	f.Fuzz(func(t *testing.T, claimA, claimB, ref1, ref2, podName, volName string, flags uint8) {
		w := fuzzWorld{claims: map[string]*v1.PersistentVolumeClaim{}, volumes: map[string]*v1.PersistentVolume{}}
		a := w.bind(claimA, "pv-a", "h-a", flags&2 != 0)
		handleB := "h-b"
		if flags&1 != 0 {
			handleB = "h-a" // pv-b names pv-a's backend volume
		}
		w.bind(claimB, "pv-b", handleB, false)
		p1 := w.pod(podName, "node-1", volName, ref1, flags&8 != 0)
		w.pod("other", "node-2", volName, ref2, false)
		if flags&16 != 0 { // claim a is p1's ephemeral claim
			a.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: p1.Name, UID: p1.UID, Controller: ptr.To(true)}}
		}
		if flags&4 != 0 {
			w.attach("pv-a", "h-a", "node-2")
		}
		if flags&32 != 0 {
			w.attach("pv-b", handleB, "node-2")
		}
		for _, node := range []string{"node-1", "node-2"} {
			for _, c := range Decide(w.facts(node, flags&64 != 0)).Create {
				w.vas = append(w.vas, c.Attachment)
			}
		}
		w.checkOneNode(t)
	})
}

type fuzzWorld struct {
	claims  map[string]*v1.PersistentVolumeClaim
	volumes map[string]*v1.PersistentVolume
	pods    []*v1.Pod
	vas     []*storagev1.VolumeAttachment
}

// bind adds claim ns/name bound to a CSI PV of the handle, ReadWriteOnce
// unless many.
func (w *fuzzWorld) bind(name, pv, handle string, many bool) *v1.PersistentVolumeClaim {
	mode := v1.ReadWriteOnce
	if many {
		mode = v1.ReadWriteMany
	}
	c := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + pv)},
		Spec: v1.PersistentVolumeClaimSpec{VolumeName: pv}, Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound}}
	w.claims["ns/"+name] = c
	w.volumes[pv] = &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: pv},
		Spec: v1.PersistentVolumeSpec{AccessModes: []v1.PersistentVolumeAccessMode{mode},
			ClaimRef:               &v1.ObjectReference{Namespace: "ns", Name: name, UID: c.UID},
			PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: drv, VolumeHandle: handle}}}}
	return c
}

// pod adds a pod on node with one volume: a claim reference, or a generic
// ephemeral volume (whose claim is <pod>-<volume>).
func (w *fuzzWorld) pod(name, node, volume, claim string, ephemeral bool) *v1.Pod {
	vol := v1.Volume{Name: volume}
	if ephemeral {
		vol.Ephemeral = &v1.EphemeralVolumeSource{}
	} else {
		vol.PersistentVolumeClaim = &v1.PersistentVolumeClaimVolumeSource{ClaimName: claim}
	}
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("pod-" + node)},
		Spec: v1.PodSpec{NodeName: node, Volumes: []v1.Volume{vol}}}
	w.pods = append(w.pods, p)
	return p
}

func (w *fuzzWorld) attach(pv, handle, node string) {
	w.vas = append(w.vas, &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: Name(handle, drv, node)},
		Spec: storagev1.VolumeAttachmentSpec{Attacher: drv, NodeName: node,
			Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: ptr.To(pv)}},
		Status: storagev1.VolumeAttachmentStatus{Attached: true}})
}

// facts are a node's facts; users says whether Users is filled (the
// Multi-Attach rule must not depend on it: it only words the event).
func (w *fuzzWorld) facts(node string, users bool) Facts {
	f := Facts{Node: Node{Name: node, Exists: true, Ready: true, Managed: true},
		Claims: w.claims, Volumes: w.volumes, Users: map[string][]*v1.Pod{}, Attachments: w.vas, Now: t0}
	for _, p := range w.pods {
		if p.Spec.NodeName == node {
			f.Pods = append(f.Pods, p)
		}
		for _, vol := range p.Spec.Volumes {
			if c := vol.PersistentVolumeClaim; c != nil && users && w.claims["ns/"+c.ClaimName] != nil {
				pv := w.claims["ns/"+c.ClaimName].Spec.VolumeName
				f.Users[pv] = append(f.Users[pv], p)
			}
		}
	}
	return f
}

// checkOneNode: every volume some PV of which allows one node only has
// attachments on one node at most.
func (w *fuzzWorld) checkOneNode(t *testing.T) {
	t.Helper()
	single := map[v1.UniqueVolumeName]bool{}
	byHandle := map[string]v1.UniqueVolumeName{}
	for _, pv := range w.volumes {
		u := UniqueVolumeName(pv.Spec.CSI.Driver, pv.Spec.CSI.VolumeHandle)
		single[u] = single[u] || !MultiAttachAllowed(pv)
		byHandle[pv.Name] = u
	}
	nodes := map[v1.UniqueVolumeName]map[string]bool{}
	for _, va := range w.vas {
		u := byHandle[*va.Spec.Source.PersistentVolumeName]
		if nodes[u] == nil {
			nodes[u] = map[string]bool{}
		}
		nodes[u][va.Spec.NodeName] = true
	}
	for u, on := range nodes {
		if single[u] && len(on) > 1 {
			t.Fatalf("single-node volume %s attached to %d nodes: %v", u, len(on), on)
		}
	}
}
