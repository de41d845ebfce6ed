package mounting

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/volplane/volplane/internal/attachment"
)

// steadyNode is a node of n running pods, each with its own claim of the
// network driver, attached, reported, staged and published: the world a
// pod sync of today's node agent decides on (the whole node's).
func steadyNode(n int) World {
	w := world(network)
	w.Claims = map[string]*corev1.PersistentVolumeClaim{}
	w.Volumes = map[string]*corev1.PersistentVolume{}
	w.Attached = map[corev1.UniqueVolumeName]bool{}
	w.Attachments = map[string]*storagev1.VolumeAttachment{}
	w.Registered = true
	for i := range n {
		uid := types.UID(fmt.Sprintf("uid-%d", i))
		claim, pvName, handle := fmt.Sprintf("data-%d", i), fmt.Sprintf("pv-%d", i), fmt.Sprintf("h-%d", i)
		w.Claims["ns/"+claim] = &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: claim, UID: types.UID("c-" + uid)},
			Spec:       corev1.PersistentVolumeClaimSpec{VolumeName: pvName},
			Status:     corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound}}
		w.Volumes[pvName] = &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: pvName},
			Spec: corev1.PersistentVolumeSpec{
				ClaimRef: &corev1.ObjectReference{Namespace: "ns", Name: claim, UID: types.UID("c-" + uid)},
				PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
					Driver: network, VolumeHandle: handle}}}}
		u := attachment.UniqueVolumeName(network, handle)
		w.Reported = append(w.Reported, u)
		w.Attached[u] = true
		name := attachment.Name(handle, network, node)
		w.Attachments[name] = &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: name},
			Status: storagev1.VolumeAttachmentStatus{Attached: true}}
		w.Pods = append(w.Pods, pod(uid, claim))
		w.Staged = append(w.Staged, Staged{Driver: network, Handle: handle, PV: pvName, Done: true})
		w.Published = append(w.Published, Published{PodUID: uid, Driver: network, Handle: handle, PV: pvName, Done: true})
		w.PodDirs = append(w.PodDirs, uid)
	}
	return w
}

// BenchmarkDecideOnePodSync is the pure decision a pod sync runs today
// (mounting.Decide over the node's world, then the pod's plan) at 10 and
// 1,000 pods on the node. Flat in N would be a ratio within 1.5x.
func BenchmarkDecideOnePodSync(b *testing.B) {
	for _, n := range []int{10, 1000} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			w := steadyNode(n)
			p := w.Pods[0]
			b.ReportAllocs()
			for b.Loop() {
				plan := Decide(w)
				if _, ok := plan.PodPlan(p); !ok {
					b.Fatal("no plan for the pod")
				}
			}
		})
	}
}
