package nodeagent

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/attachment"
	"github.com/volplane/volplane/internal/mounting"
)

// TestPodWorldReadsExactlyThePodsRecords: what a pod sync reads from the
// node's disk and informers (podWorld) is the node's whole world narrowed
// to the pod (mounting.World.ForPod), for every pod of a node holding
// stagings and publications of shared, ReadWriteOncePod and block volumes,
// records of pods gone, and attachments of this node and of another; so
// DecidePod on it plans what the node's Decide plans for the pod.
func TestPodWorldReadsExactlyThePodsRecords(t *testing.T) {
	const node, driver = "node-1", "csi.example.com"
	rwo, rwop := []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOncePod}
	var objs []runtime.Object
	volume := func(name string, modes []corev1.PersistentVolumeAccessMode, block bool) {
		c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c-" + name, UID: types.UID("uid-c-" + name)},
			Spec:   corev1.PersistentVolumeClaimSpec{VolumeName: name, AccessModes: modes},
			Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound}}
		pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeSpec{AccessModes: modes,
			ClaimRef:               &corev1.ObjectReference{Namespace: "ns", Name: c.Name, UID: c.UID},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: driver, VolumeHandle: "h-" + name}}}}
		if block {
			pv.Spec.VolumeMode = ptr.To(corev1.PersistentVolumeBlock)
		}
		objs = append(objs, c, pv)
		for _, n := range []string{node, "node-2"} {
			objs = append(objs, &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: attachment.Name("h-"+name, driver, n)},
				Spec: storagev1.VolumeAttachmentSpec{Attacher: driver, NodeName: n, Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: &pv.Name}}})
		}
	}
	volume("shared", rwo, false)
	volume("once", rwop, false)
	volume("raw", rwo, true)
	volume("idle", rwo, false)
	pod := func(uid string, block bool, claims ...string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: uid, UID: types.UID(uid)}, Spec: corev1.PodSpec{NodeName: node}}
		ctr := corev1.Container{Name: "c"}
		for _, c := range claims {
			p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: c,
				VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c-" + c}}})
			if block {
				ctr.VolumeDevices = append(ctr.VolumeDevices, corev1.VolumeDevice{Name: c, DevicePath: "/dev/" + c})
			} else {
				ctr.VolumeMounts = append(ctr.VolumeMounts, corev1.VolumeMount{Name: c, MountPath: "/" + c})
			}
		}
		p.Spec.Containers = []corev1.Container{ctr}
		objs = append(objs, p)
		return p
	}
	pods := []*corev1.Pod{pod("a", false, "shared"), pod("b", false, "shared", "once"), pod("c", false, "once"), pod("d", true, "raw"), pod("e", false)}
	objs = append(objs, &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: driver}, Spec: storagev1.CSIDriverSpec{AttachRequired: ptr.To(true)}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}})

	a, ctx := syncedAgent(t, node, objs...), context.Background()
	n := a.nodes[node]
	l := n.layout
	stage := func(name string, block bool) {
		dir, _ := l.StagePaths(block, driver, "h-"+name, name)
		mustWrite(t, dir, mounting.VolData{Driver: driver, Handle: "h-" + name, Done: true})
	}
	publish := func(uid types.UID, name string, block bool) {
		dir, _ := l.PublishPaths(block, uid, name)
		mustWrite(t, dir, mounting.VolData{Driver: driver, Handle: "h-" + name, PV: name, Done: true})
	}
	stage("shared", false)
	stage("once", false)
	stage("raw", true)
	stage("idle", false)
	publish("a", "shared", false)
	publish("b", "shared", false)
	publish("c", "once", false)
	publish("d", "raw", true)
	publish("gone", "idle", false)

	whole, err := a.world(ctx, n)
	if err != nil {
		t.Fatal(err)
	}
	full := mounting.Decide(whole)
	for _, p := range pods {
		got, err := a.podWorld(ctx, n, p)
		if err != nil {
			t.Fatal(err)
		}
		want := whole.ForPod(p)
		if !reflect.DeepEqual(records(got), records(want)) {
			t.Errorf("pod %s: podWorld read\n%+v\nwant (the node's world narrowed)\n%+v", p.Name, records(got), records(want))
		}
		if !reflect.DeepEqual(got.Attachments, want.Attachments) {
			t.Errorf("pod %s: podWorld attachments %v, want %v", p.Name, keysOf(got.Attachments), keysOf(want.Attachments))
		}
		plan, _, _ := mounting.DecidePod(got, p)
		if wantPlan, _ := full.PodPlan(p); !reflect.DeepEqual(plan, wantPlan) {
			t.Errorf("pod %s: DecidePod on podWorld %+v, Decide %+v", p.Name, plan, wantPlan)
		}
	}
}

// records are a world's stagings and publications in one order, with the
// staging's PV name left out (the node's world names it from any
// publication of the volume; the pod's world from the pod's claim).
func records(w mounting.World) []string {
	var out []string
	for _, s := range w.Staged {
		s.PV = ""
		out = append(out, "staged "+stringOf(s))
	}
	for _, p := range w.Published {
		out = append(out, "published "+stringOf(p))
	}
	slices.Sort(out)
	return out
}

func stringOf(v any) string { return fmt.Sprintf("%+v", v) }

func keysOf[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func mustWrite(t *testing.T, dir string, data mounting.VolData) {
	t.Helper()
	if err := writeVolData(dir, data); err != nil {
		t.Fatal(err)
	}
}

// syncedAgent is an agent of one node over a fake clientset holding objs,
// its informers started (until the test ends) and synced.
func syncedAgent(t testing.TB, node string, objs ...runtime.Object) *Agent {
	t.Helper()
	a, err := New(Config{Client: fake.NewClientset(objs...), DataDir: t.TempDir(), Nodes: []Node{{Name: node}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	a.factory.Start(ctx.Done())
	for typ, ok := range a.factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("informer of %v did not sync", typ)
		}
	}
	return a
}
