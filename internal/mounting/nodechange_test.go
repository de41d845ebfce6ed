package mounting

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/volplane/volplane/internal/attachment"
)

func changeNode(labels map[string]string, inUse []corev1.UniqueVolumeName, attached ...corev1.UniqueVolumeName) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: labels}}
	n.Status.VolumesInUse = inUse
	for _, a := range attached {
		n.Status.VolumesAttached = append(n.Status.VolumesAttached, corev1.AttachedVolume{Name: a, DevicePath: "x"})
	}
	return n
}

func TestChangeOfANodeConcernsOnlyThePodsOfTheVolumesItChanged(t *testing.T) {
	a := attachment.UniqueVolumeName("d", "vol-a")
	b := attachment.UniqueVolumeName("d", "vol-b")
	labels := map[string]string{"zone": "1"}
	before := changeNode(labels, []corev1.UniqueVolumeName{a})
	pvs := map[string]*corev1.PersistentVolume{
		"ns/ca": {Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "d", VolumeHandle: "vol-a"}}}},
		"ns/cb": {Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "d", VolumeHandle: "vol-b"}}}},
		"ns/ci": {Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: corev1.PersistentVolumeSource{ISCSI: &corev1.ISCSIPersistentVolumeSource{}}}},
	}
	volumeOf := func(k string) *corev1.PersistentVolume { return pvs[k] }
	pod := func(name string, claims ...string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)}}
		for _, c := range claims {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: c,
				VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: c}}})
		}
		return p
	}
	podA, podB, podIntree, podUnbound := pod("a", "ca"), pod("b", "cb"), pod("i", "ci"), pod("u", "none")
	inline := pod("inline")
	inline.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{Driver: "d"}}}}
	inlineName := attachment.UniqueVolumeName("d", InlineHandle(inline, "scratch"))

	for _, tc := range []struct {
		what      string
		old, cur  *corev1.Node
		concerned map[*corev1.Pod]bool
	}{
		{"added", nil, before, map[*corev1.Pod]bool{podA: true, podB: true, podIntree: true, podUnbound: true, inline: true}},
		{"labels", before, changeNode(map[string]string{"zone": "2"}, []corev1.UniqueVolumeName{a}),
			map[*corev1.Pod]bool{podA: true, podB: true, podIntree: true, podUnbound: true, inline: true}},
		{"heartbeat", before, changeNode(labels, []corev1.UniqueVolumeName{a}), map[*corev1.Pod]bool{}},
		{"a attached", before, changeNode(labels, []corev1.UniqueVolumeName{a}, a), map[*corev1.Pod]bool{podA: true, podIntree: true}},
		{"b reported", before, changeNode(labels, []corev1.UniqueVolumeName{a, b}), map[*corev1.Pod]bool{podB: true, podIntree: true}},
		{"a no longer reported", before, changeNode(labels, nil), map[*corev1.Pod]bool{podA: true, podIntree: true}},
		{"inline attached", before, changeNode(labels, []corev1.UniqueVolumeName{a}, inlineName), map[*corev1.Pod]bool{inline: true, podIntree: true}},
	} {
		c := ChangeOf(tc.old, tc.cur)
		for _, p := range []*corev1.Pod{podA, podB, podIntree, podUnbound, inline} {
			if got := c.Concerns(p, volumeOf); got != tc.concerned[p] {
				t.Errorf("%s: pod %s concerned %v, want %v", tc.what, p.Name, got, tc.concerned[p])
			}
		}
	}
}
