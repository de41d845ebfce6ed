package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/kubectl/pkg/util/podutils"

	"github.com/volplane/volplane/internal/attachment"
	"github.com/volplane/volplane/internal/hostpath"
)

// networkWalkthrough is the README's network-volume walkthrough, run against
// `volplane up` with the kernel's mounts (up runs as root here).
type networkWalkthrough struct {
	dir    string
	pv     string
	handle string
}

// startNetworkWalkthrough applies examples/network.yaml, waits for the
// writer pod to run on node-1 with its volume attached there, and writes a
// file through the pod's published path, which lands in the backend volume.
func startNetworkWalkthrough(t *testing.T, dir string) *networkWalkthrough {
	t.Helper()
	if out, err := kubectl(t, dir, "apply", "-f", filepath.Join("..", "..", "examples", "network.yaml")); err != nil {
		t.Fatalf("volplane kubectl apply -f examples/network.yaml: %v\n%s", err, out)
	}
	client := clientFor(t, dir)
	waitClaimBound(t, client, "default", "shared")
	claim, err := client.CoreV1().PersistentVolumeClaims("default").Get(context.Background(), "shared", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pv, err := client.CoreV1().PersistentVolumes().Get(context.Background(), claim.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w := &networkWalkthrough{dir: dir, pv: pv.Name, handle: pv.Spec.CSI.VolumeHandle}
	writer := waitPodRunning(t, client, "writer")
	w.wantAttachedTo(t, client, "node-1")
	published := w.publishedPath("node-1", writer)
	if err := os.WriteFile(filepath.Join(published, "hello"), []byte("from node-1\n"), 0o644); err != nil {
		t.Fatalf("writing through the writer pod's published path: %v", err)
	}
	backend, _ := filepath.Glob(filepath.Join(dir, "network", "volumes", w.handle+"*", "hello"))
	if len(backend) != 1 {
		t.Fatalf("the file written on node-1 is not in the backend volume %s (found %v)", w.handle, backend)
	}
	return w
}

// grows is the README's expansion walkthrough: the claim's request raised
// with kubectl patch, the claim reaches 2Gi under the running writer pod
// (the network driver needs the node, so the node agent finishes it) and
// says so in its events.
func (w *networkWalkthrough) grows(t *testing.T) {
	t.Helper()
	patch := `{"spec":{"resources":{"requests":{"storage":"2Gi"}}}}`
	if out, err := kubectl(t, w.dir, "patch", "pvc", "shared", "-p", patch); err != nil {
		t.Fatalf("volplane kubectl patch pvc shared: %v\n%s", err, out)
	}
	client := clientFor(t, w.dir)
	var last string
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		claim, err := client.CoreV1().PersistentVolumeClaims("default").Get(context.Background(), "shared", metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			continue
		}
		got := claim.Status.Capacity[corev1.ResourceStorage]
		if got.String() == "2Gi" && len(claim.Status.AllocatedResourceStatuses) == 0 {
			break
		}
		last = "capacity " + got.String()
	}
	out, err := kubectl(t, w.dir, "describe", "pvc", "shared")
	if err != nil {
		t.Fatalf("volplane kubectl describe pvc shared: %v\n%s", err, out)
	}
	for _, want := range []string{"2Gi", "ExternalExpanding", "Resizing", "FileSystemResizeRequired", "FileSystemResizeSuccessful"} {
		if !strings.Contains(out, want) {
			t.Errorf("describe pvc shared lacks %q (last seen: %s):\n%s", want, last, out)
		}
	}
}

// followsItsPod is the second half: the writer pod deleted, its volume is
// unpublished and detached from node-1; the reader pod on node-2 runs with
// the volume attached there and sees the file.
func (w *networkWalkthrough) followsItsPod(t *testing.T) {
	t.Helper()
	client := clientFor(t, w.dir)
	writer, err := client.CoreV1().Pods("default").Get(context.Background(), "writer", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if out, err := kubectl(t, w.dir, "delete", "pod", "writer", "--timeout=60s"); err != nil {
		t.Fatalf("volplane kubectl delete pod writer: %v\n%s", err, out)
	}
	if _, err := os.Stat(w.publishedPath("node-1", writer)); !os.IsNotExist(err) {
		t.Errorf("the writer pod's published path is still there after its deletion: %v", err)
	}
	if out, err := kubectl(t, w.dir, "apply", "-f", filepath.Join("..", "..", "examples", "network-reader.yaml")); err != nil {
		t.Fatalf("volplane kubectl apply -f examples/network-reader.yaml: %v\n%s", err, out)
	}
	reader := waitPodRunning(t, client, "reader")
	w.wantAttachedTo(t, client, "node-2")
	data, err := os.ReadFile(filepath.Join(w.publishedPath("node-2", reader), "hello"))
	if err != nil || string(data) != "from node-1\n" {
		t.Errorf("the reader pod on node-2 sees %q (%v), want what the writer wrote", data, err)
	}
}

// publishedPath is where the node agent publishes the volume for pod,
// the kubelet's layout under DIR/nodes/<node>.
func (w *networkWalkthrough) publishedPath(node string, pod *corev1.Pod) string {
	return filepath.Join(w.dir, "nodes", node, "pods", string(pod.UID), "volumes", "kubernetes.io~csi", w.pv, "mount")
}

// wantAttachedTo waits until the volume's only VolumeAttachment is the one
// to node, attached, and the node reports it attached.
func (w *networkWalkthrough) wantAttachedTo(t *testing.T, client kubernetes.Interface, node string) {
	t.Helper()
	want := attachment.Name(w.handle, hostpath.NetworkDriverName, node)
	unique := attachment.UniqueVolumeName(hostpath.NetworkDriverName, w.handle)
	var last string
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		last = w.attachmentState(client, node, want, unique)
		if last == "" {
			return
		}
	}
	t.Fatalf("volume %s not attached to %s alone: %s", w.pv, node, last)
}

func (w *networkWalkthrough) attachmentState(client kubernetes.Interface, node, want string, unique corev1.UniqueVolumeName) string {
	ctx := context.Background()
	vas, err := client.StorageV1().VolumeAttachments().List(ctx, metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var mine []storagev1.VolumeAttachment
	for _, va := range vas.Items {
		if p := va.Spec.Source.PersistentVolumeName; p != nil && *p == w.pv {
			mine = append(mine, va)
		}
	}
	if len(mine) != 1 || mine[0].Name != want || !mine[0].Status.Attached {
		return "VolumeAttachments of the PV: " + describeAttachments(mine)
	}
	n, err := client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return err.Error()
	}
	for _, a := range n.Status.VolumesAttached {
		if a.Name == unique {
			return ""
		}
	}
	return node + " does not report " + string(unique) + " attached"
}

func describeAttachments(vas []storagev1.VolumeAttachment) string {
	var parts []string
	for _, va := range vas {
		parts = append(parts, va.Name+" on "+va.Spec.NodeName+" attached="+map[bool]string{true: "true", false: "false"}[va.Status.Attached])
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// waitPodRunning waits until the pod in default is Running and Ready.
func waitPodRunning(t *testing.T, client kubernetes.Interface, name string) *corev1.Pod {
	t.Helper()
	var last string
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		pod, err := client.CoreV1().Pods("default").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			last = err.Error()
			continue
		}
		if pod.Status.Phase == corev1.PodRunning && podutils.IsPodReady(pod) {
			return pod
		}
		last = "phase " + string(pod.Status.Phase) + " on " + pod.Spec.NodeName
	}
	events, _ := client.CoreV1().Events("default").List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	var seen []string
	if events != nil {
		for _, e := range events.Items {
			seen = append(seen, e.Reason+": "+e.Message)
		}
	}
	t.Fatalf("pod %s not Running and Ready: %s; events %v", name, last, seen)
	return nil
}
