package inline

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubectl/pkg/util/podutils"

	"github.com/volplane/volplane/internal/hostpath"
	"github.com/volplane/volplane/internal/mounting"
	"github.com/volplane/volplane/internal/stacktest"
	"github.com/volplane/volplane/test/e2e/support"
)

var ctx = context.Background()

func node() string { return stack.CP.Nodes[0] }

// inlinePod is a pod on the node with the inline volume "scratch" of
// driver, mounted at /scratch; mod changes the source.
func inlinePod(t *testing.T, ns, name, driver string, mod func(*corev1.CSIVolumeSource)) *corev1.Pod {
	t.Helper()
	src := &corev1.CSIVolumeSource{Driver: driver}
	if mod != nil {
		mod(src)
	}
	p := support.Pod(ns, name, node(), "")
	p.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{CSI: src}}}
	p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "scratch", MountPath: "/scratch"}}
	p, err := stack.CP.Client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// kubeletHandle is the kubelet's handle of a pod's inline volume, computed
// here from its definition: "csi-" + hex sha256(pod UID + volume name).
func kubeletHandle(p *corev1.Pod, volume string) string {
	return fmt.Sprintf("csi-%x", sha256.Sum256([]byte(string(p.UID)+volume)))
}

func target(p *corev1.Pod) string {
	return mounting.Layout{Root: mounting.NodeRoot(stack.DataDir(), node())}.TargetPath(p.UID, "scratch")
}

func waitRunning(t *testing.T, p *corev1.Pod) {
	t.Helper()
	stacktest.Eventually(t, "pod "+p.Name+" Running and Ready", func() string {
		got, err := stack.CP.Client.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		if got.Status.Phase == corev1.PodRunning && podutils.IsPodReady(got) {
			return ""
		}
		return fmt.Sprintf("phase %s; events %s", got.Status.Phase, events(p))
	}, stack.EndedEarly)
}

func deletePod(t *testing.T, p *corev1.Pod) {
	t.Helper()
	if err := stack.CP.Client.CoreV1().Pods(p.Namespace).Delete(ctx, p.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}

func waitGone(t *testing.T, p *corev1.Pod) {
	t.Helper()
	stacktest.Eventually(t, "pod "+p.Name+" gone", func() string {
		_, err := stack.CP.Client.CoreV1().Pods(p.Namespace).Get(ctx, p.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return ""
		}
		return fmt.Sprintf("still there (%v)", err)
	}, stack.EndedEarly)
}

func events(p *corev1.Pod) string {
	list, err := stack.CP.Client.CoreV1().Events(p.Namespace).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + p.Name})
	if err != nil {
		return err.Error()
	}
	var out []string
	for _, ev := range list.Items {
		out = append(out, ev.Reason+": "+ev.Message)
	}
	return "[" + strings.Join(out, "; ") + "]"
}

// waitEvent waits for a FailedMount event of the pod holding text.
func waitEvent(t *testing.T, p *corev1.Pod, text string) {
	t.Helper()
	stacktest.Eventually(t, "FailedMount with "+text, func() string {
		if got := events(p); !strings.Contains(got, text) {
			return "events " + got
		}
		return ""
	}, stack.EndedEarly)
}

// published waits for the inline volume of p to be mounted and returns
// the directory of its data (the mount's source).
func published(t *testing.T, p *corev1.Pod) string {
	t.Helper()
	var source string
	stacktest.Eventually(t, "inline volume mounted", func() string {
		m, ok := stack.Mounter.Mounts()[target(p)]
		if !ok {
			return "nothing mounted at " + target(p)
		}
		source = m.Source
		return ""
	}, stack.EndedEarly)
	return source
}

// The pod runs with its inline volume, published as the kubelet publishes
// it and never staged; what it wrote goes with the volume when the pod goes.
func TestInlineVolumeLivesAndDiesWithItsPod(t *testing.T) {
	ns := stacktest.Namespace(t)
	p := inlinePod(t, ns, "app", hostpath.DriverName, func(s *corev1.CSIVolumeSource) {
		s.VolumeAttributes = map[string]string{hostpath.SizeAttribute: "8Mi"}
	})
	waitRunning(t, p)
	handle := kubeletHandle(p, "scratch")
	pubs := callsOf("NodePublishVolume", handle)
	if len(pubs) == 0 {
		t.Fatalf("no NodePublishVolume of %s", handle)
	}
	req := pubs[0].(*csipb.NodePublishVolumeRequest)
	wantCtx := map[string]string{hostpath.SizeAttribute: "8Mi", mounting.EphemeralKey: "true", mounting.PodNameKey: "app",
		mounting.PodNamespaceKey: ns, mounting.PodUIDKey: string(p.UID), mounting.ServiceAccountNameKey: "default"}
	if fmt.Sprint(req.VolumeContext) != fmt.Sprint(wantCtx) || req.TargetPath != target(p) || req.StagingTargetPath != "" || req.Readonly {
		t.Errorf("publish %v: want context %v at %s, no staging path, read-write", req, wantCtx, target(p))
	}
	if n := len(callsOf("NodeStageVolume", handle)); n != 0 {
		t.Errorf("%d NodeStageVolume calls for an inline volume", n)
	}
	data := published(t, p)
	if err := os.WriteFile(filepath.Join(data, "hello"), []byte("from the pod"), 0o600); err != nil {
		t.Fatalf("write into the inline volume: %v", err)
	}
	deletePod(t, p)
	waitGone(t, p)
	stacktest.Eventually(t, "inline volume deleted", func() string {
		if _, err := os.Stat(data); !os.IsNotExist(err) {
			return fmt.Sprintf("data %s still there (%v)", data, err)
		}
		if _, ok := stack.Mounter.Mounts()[target(p)]; ok {
			return "target still mounted"
		}
		return ""
	}, stack.EndedEarly)
	if n := len(callsOf("NodeUnpublishVolume", handle)); n == 0 {
		t.Error("no NodeUnpublishVolume of the inline volume")
	}
}

// A driver whose CSIDriver lists Persistent only (up's network driver):
// the pod is refused with the kubelet's SetUp text and does not run.
func TestInlineVolumeOfAPersistentOnlyDriverIsRefused(t *testing.T) {
	ns := stacktest.Namespace(t)
	p := inlinePod(t, ns, "app", hostpath.NetworkDriverName, nil)
	waitEvent(t, p, `MountVolume.SetUp failed for volume "scratch" : kubernetes.io/csi: mounter.SetupAt failed to check volume lifecycle mode: volume mode "Ephemeral" not supported by driver `+
		hostpath.NetworkDriverName+` (only supports ["Persistent"])`)
	if got, err := stack.CP.Client.CoreV1().Pods(ns).Get(ctx, p.Name, metav1.GetOptions{}); err != nil || got.Status.Phase == corev1.PodRunning {
		t.Errorf("pod %v (%v): want it not running", got.Status.Phase, err)
	}
	if n := len(callsOf("NodePublishVolume", kubeletHandle(p, "scratch"))); n != 0 {
		t.Errorf("%d publishes of a refused inline volume", n)
	}
}
