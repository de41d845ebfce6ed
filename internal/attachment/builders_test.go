package attachment

import (
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

const (
	drv  = "net.csi.volplane.io"
	node = "node-1"
)

var t0 = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

// world is the facts of node-1 built up by the tests.
type world struct{ f Facts }

func newWorld() *world {
	return &world{f: Facts{
		Node:    Node{Name: node, Exists: true, Ready: true, Managed: true},
		Claims:  map[string]*v1.PersistentVolumeClaim{},
		Volumes: map[string]*v1.PersistentVolume{},
		Drivers: map[string]*storagev1.CSIDriver{},
		Users:   map[string][]*v1.Pod{},
		Now:     t0,
	}}
}

// volume adds a claim ns/<name> bound to a CSI PV pv-<name> with handle
// h-<name>, ReadWriteOnce unless modes are given.
func (w *world) volume(name string, modes ...v1.PersistentVolumeAccessMode) *v1.PersistentVolume {
	if modes == nil {
		modes = []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce}
	}
	claim := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)},
		Spec: v1.PersistentVolumeClaimSpec{VolumeName: "pv-" + name}, Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound}}
	pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-" + name},
		Spec: v1.PersistentVolumeSpec{AccessModes: modes,
			ClaimRef:               &v1.ObjectReference{Namespace: "ns", Name: name, UID: claim.UID},
			PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: drv, VolumeHandle: "h-" + name}}}}
	w.f.Claims["ns/"+name] = claim
	w.f.Volumes[pv.Name] = pv
	return pv
}

func (w *world) pod(name, onNode string, claims ...string) *v1.Pod {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("pod-" + name)},
		Spec: v1.PodSpec{NodeName: onNode}}
	for _, c := range claims {
		pod.Spec.Volumes = append(pod.Spec.Volumes, v1.Volume{Name: c,
			VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: c}}})
	}
	if onNode == node {
		w.f.Pods = append(w.f.Pods, pod)
	}
	for _, c := range claims {
		w.f.Users["pv-"+c] = append(w.f.Users["pv-"+c], pod)
	}
	return pod
}

// attachment adds the VolumeAttachment of pv-<name> on onNode.
func (w *world) attachment(name, onNode string, attached bool) *storagev1.VolumeAttachment {
	pv := "pv-" + name
	va := &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: Name("h-"+name, drv, onNode)},
		Spec: storagev1.VolumeAttachmentSpec{Attacher: drv, NodeName: onNode,
			Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: &pv}},
		Status: storagev1.VolumeAttachmentStatus{Attached: attached}}
	w.f.Attachments = append(w.f.Attachments, va)
	return va
}

func (w *world) inUse(names ...string) {
	for _, n := range names {
		w.f.Node.VolumesInUse = append(w.f.Node.VolumesInUse, unique(n))
	}
}

func (w *world) reported(names ...string) {
	for _, n := range names {
		w.f.Node.VolumesAttached = append(w.f.Node.VolumesAttached, v1.AttachedVolume{Name: unique(n)})
	}
}

func (w *world) driver(attachRequired *bool) {
	w.f.Drivers[drv] = &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: drv},
		Spec: storagev1.CSIDriverSpec{AttachRequired: attachRequired}}
}

func unique(name string) v1.UniqueVolumeName { return UniqueVolumeName(drv, "h-"+name) }

func reasons(p Plan) []WaitReason {
	var out []WaitReason
	for _, w := range p.Wait {
		out = append(out, w.Reason)
	}
	return out
}
