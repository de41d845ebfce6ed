package nodeagent

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/attachment"
	"github.com/volplane/volplane/internal/mounting"
)

// BenchmarkPodSync is what one pod sync reads and decides on a node of 10
// and of 1,000 running pods, each with its own attached, staged and
// published volume: the pod's own world (podWorld + DecidePod, what
// syncPod does) beside the node's whole world (world + Decide, what it did
// before). Records are on a real disk, objects in informers.
//
//	go test -run '^$' -bench PodSync ./internal/nodeagent/
func BenchmarkPodSync(b *testing.B) {
	for _, pods := range []int{10, 1000} {
		a, n, all := steadyAgentNode(b, pods)
		p := all[pods/2]
		ctx := context.Background()
		b.Run(fmt.Sprintf("pods=%d/pod-world", pods), func(b *testing.B) {
			for b.Loop() {
				w, err := a.podWorld(ctx, n, p)
				if err != nil {
					b.Fatal(err)
				}
				if _, live, _ := mounting.DecidePod(w, p); !live {
					b.Fatal("pod not live")
				}
			}
		})
		b.Run(fmt.Sprintf("pods=%d/node-world", pods), func(b *testing.B) {
			for b.Loop() {
				w, err := a.world(ctx, n)
				if err != nil {
					b.Fatal(err)
				}
				if _, ok := mounting.Decide(w).PodPlan(p); !ok {
					b.Fatal("no plan for the pod")
				}
			}
		})
	}
}

// steadyAgentNode is an agent (informers synced, not running) with one node
// of n running pods, each using its own claim of an attached volume,
// staged and published on disk.
func steadyAgentNode(b *testing.B, pods int) (*Agent, *nodeState, []*corev1.Pod) {
	const node, driver = "node-1", "csi.example.com"
	objs := []runtime.Object{&storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: driver}, Spec: storagev1.CSIDriverSpec{AttachRequired: ptr.To(true)}}}
	nodeObj := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}}
	var all []*corev1.Pod
	for i := range pods {
		name := fmt.Sprintf("pv-%d", i)
		c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c-" + name, UID: types.UID("uid-c-" + name)},
			Spec: corev1.PersistentVolumeClaimSpec{VolumeName: name}, Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound}}
		pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeSpec{
			ClaimRef:               &corev1.ObjectReference{Namespace: "ns", Name: c.Name, UID: c.UID},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: driver, VolumeHandle: "h-" + name}}}}
		va := &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: attachment.Name("h-"+name, driver, node)},
			Spec:   storagev1.VolumeAttachmentSpec{Attacher: driver, NodeName: node, Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: &pv.Name}},
			Status: storagev1.VolumeAttachmentStatus{Attached: true}}
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("pod-%d", i), UID: types.UID(fmt.Sprintf("uid-pod-%d", i))},
			Spec: corev1.PodSpec{NodeName: node, Volumes: []corev1.Volume{{Name: "data",
				VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: c.Name}}}},
				Containers: []corev1.Container{{Name: "c", VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning}}
		unique := attachment.UniqueVolumeName(driver, "h-"+name)
		nodeObj.Status.VolumesInUse = append(nodeObj.Status.VolumesInUse, unique)
		nodeObj.Status.VolumesAttached = append(nodeObj.Status.VolumesAttached, corev1.AttachedVolume{Name: unique})
		objs = append(objs, c, pv, va, p)
		all = append(all, p)
	}
	objs = append(objs, nodeObj)
	a := syncedAgent(b, node, objs...)
	n := a.nodes[node]
	for i, p := range all {
		name := fmt.Sprintf("pv-%d", i)
		dir, _ := n.layout.StagePaths(false, driver, "h-"+name, name)
		data := mounting.VolData{Driver: driver, Handle: "h-" + name, Done: true}
		if err := writeVolData(dir, data); err != nil {
			b.Fatal(err)
		}
		dir, _ = n.layout.PublishPaths(false, p.UID, name)
		data.PV = name
		if err := writeVolData(dir, data); err != nil {
			b.Fatal(err)
		}
	}
	return a, n, all
}
