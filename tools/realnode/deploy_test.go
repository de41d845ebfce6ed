package realnode

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/tools/realnode/harness"
)

// Images of deploy/ as `mkimage images` (tools/realnode/runtime/mkimage,
// build.sh's images target) assembles them from the Dockerfile's own build
// (no registry).
const (
	volplaneImage  = "localhost/volplane/volplane:dev"
	registrarImage = "localhost/volplane/csi-node-driver-registrar:v2.17.0"
)

// overlayPatch is one change the test's kustomize overlay makes to deploy/:
// a JSON patch that first tests the old value (so deploy/ changing under it
// fails the build instead of being patched blindly) and then replaces it.
type overlayPatch struct {
	kind, name string
	path       string
	old, new   string
}

// overlayPatches are every patch deploy/ needs on this machine, besides the
// images (kustomize images:) and imagePullPolicy Never on every container:
// the kubelet's root dir is the run's (--root-dir), not /var/lib/kubelet,
// and the driver's data dir is under the run's work dir, which is an rshared
// mount (`/` is private here).
func overlayPatches(n *harness.Node) []overlayPatch {
	kubelet := n.KubeletRoot
	data := filepath.Join(n.Work, "driver")
	ds := func(path, old, new string) overlayPatch {
		return overlayPatch{"DaemonSet", "volplane-node", "/spec/template/spec/" + path, old, new}
	}
	return []overlayPatch{
		ds("containers/0/args/3", "--data-dir=/var/lib/volplane/hostpath", "--data-dir="+data),
		ds("containers/0/volumeMounts/1/mountPath", "/var/lib/kubelet/pods", kubelet+"/pods"),
		ds("containers/0/volumeMounts/2/mountPath", "/var/lib/kubelet/plugins", kubelet+"/plugins"),
		ds("containers/0/volumeMounts/3/mountPath", "/var/lib/volplane/hostpath", data),
		ds("containers/1/args/1", "--kubelet-registration-path=/var/lib/kubelet/plugins/hostpath.csi.volplane.io/csi.sock",
			"--kubelet-registration-path="+kubelet+"/plugins/hostpath.csi.volplane.io/csi.sock"),
		ds("volumes/1/hostPath/path", "/var/lib/kubelet/plugins/hostpath.csi.volplane.io", kubelet+"/plugins/hostpath.csi.volplane.io"),
		ds("volumes/2/hostPath/path", "/var/lib/kubelet/pods", kubelet+"/pods"),
		ds("volumes/3/hostPath/path", "/var/lib/kubelet/plugins", kubelet+"/plugins"),
		ds("volumes/4/hostPath/path", "/var/lib/kubelet/plugins_registry", kubelet+"/plugins_registry"),
		ds("volumes/5/hostPath/path", "/var/lib/volplane/hostpath", data),
	}
}

// pullNever sets imagePullPolicy Never on every container of deploy/'s
// workloads (the images exist only in the node's containerd).
var pullNever = map[string][]int{"DaemonSet/volplane-node": {0, 1, 2}, "Deployment/volplane-controller": {0}}

// writeOverlay writes the overlay's kustomization.yaml over the repo's
// deploy/ and returns its dir.
func writeOverlay(t *testing.T, n *harness.Node) string {
	t.Helper()
	deployDir, err := filepath.Abs(filepath.Join("..", "..", "deploy"))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(n.Work, "overlay")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(deployDir, filepath.Join(dir, "deploy")); err != nil {
		t.Fatal(err)
	}
	ops := map[string][]string{}
	for _, p := range overlayPatches(n) {
		key := p.kind + "/" + p.name
		ops[key] = append(ops[key],
			fmt.Sprintf("  - {op: test, path: %s, value: %q}", p.path, p.old),
			fmt.Sprintf("  - {op: replace, path: %s, value: %q}", p.path, p.new))
	}
	for key, cs := range pullNever {
		for _, c := range cs {
			ops[key] = append(ops[key], fmt.Sprintf("  - {op: add, path: /spec/template/spec/containers/%d/imagePullPolicy, value: Never}", c))
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - deploy\nimages:\n")
	// Names as deploy/ has them after its own images: rewrite.
	for name, ref := range map[string]string{"ghcr.io/volplane/volplane": volplaneImage, "registry.k8s.io/sig-storage/csi-node-driver-registrar": registrarImage} {
		newName, newTag, _ := strings.Cut(strings.TrimPrefix(ref, "localhost/"), ":")
		fmt.Fprintf(&b, "  - {name: %s, newName: localhost/%s, newTag: %q}\n", name, newName, newTag)
	}
	b.WriteString("patches:\n")
	for key, lines := range ops {
		kind, name, _ := strings.Cut(key, "/")
		fmt.Fprintf(&b, "- target: {kind: %s, name: %s}\n  patch: |-\n", kind, name)
		for _, l := range lines {
			b.WriteString("  " + l + "\n")
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("overlay:\n%s", b.String())
	return dir
}

// deployImages makes deploy/'s images with `mkimage images` and imports
// them into the node's containerd. It rebuilds BIN/volplane-image with the
// Dockerfile's go build every run, so the image holds this checkout (a cold
// compile takes minutes, a warm one is a link).
func deployImages(t *testing.T, n *harness.Node) {
	t.Helper()
	if _, err := os.Stat(n.Bin.Path("csi-node-driver-registrar")); err != nil {
		t.Skipf("no %s: the module proxy serves no node-driver-registrar; build.sh builds it from REGISTRAR_SRC (README)",
			n.Bin.Path("csi-node-driver-registrar"))
	}
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("nice", "-n", "15", n.Bin.Path("mkimage"), "images", "-repo", repo, "-bin", n.Bin.Dir,
		"-out", filepath.Join(n.Work, "images"), "-address", n.ContainerdSock, "-rebuild")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("mkimage images: %v\n%s", err, out)
	} else {
		t.Logf("mkimage images:\n%s", out)
	}
}

// kubectl runs `volplane kubectl` as the admin of `up`.
func kubectl(t *testing.T, n *harness.Node, args ...string) string {
	t.Helper()
	out, err := exec.Command(n.Bin.Volplane, append([]string{"kubectl", "--kubeconfig", n.Admin}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// applyDeploy applies the CRDs, then the overlay, as README's "Deploying to
// a cluster" says, and waits for the controller Deployment and the node
// DaemonSet to be Ready. Its cleanup deletes it all (before the node is
// drained).
func applyDeploy(t *testing.T, n *harness.Node) {
	t.Helper()
	began := time.Now()
	deployImages(t, n)
	t.Logf("deploy/ images assembled and imported in %s", time.Since(began).Round(time.Second))
	overlay := writeOverlay(t, n)
	began = time.Now()
	kubectl(t, n, "apply", "--server-side", "-k", filepath.Join("..", "..", "deploy", "crd"))
	kubectl(t, n, "wait", "--for=condition=Established", "crd", "--all", "--timeout=60s")
	kubectl(t, n, "apply", "--server-side", "-k", overlay)
	t.Cleanup(func() {
		_, _ = exec.Command(n.Bin.Volplane, "kubectl", "--kubeconfig", n.Admin, "delete", "-k", overlay,
			"--ignore-not-found", "--wait=true", "--timeout=90s").CombinedOutput()
	})
	ctx := context.Background()
	err := harness.WaitFor(3*time.Minute, func() error {
		d, err := n.Client.AppsV1().Deployments("volplane").Get(ctx, "volplane-controller", metav1.GetOptions{})
		if err != nil {
			return err
		}
		ds, err := n.Client.AppsV1().DaemonSets("volplane").Get(ctx, "volplane-node", metav1.GetOptions{})
		if err != nil {
			return err
		}
		return ready(d, ds)
	})
	if err != nil {
		t.Fatalf("deploy/ not Ready: %v\n%s\n%s", err, kubectl(t, n, "get", "pods", "-A", "-o", "wide"), containerLogs(t, n, "volplane"))
	}
	t.Logf("deploy/ applied and Ready in %s", time.Since(began).Round(time.Second))
}

func ready(d *appsv1.Deployment, ds *appsv1.DaemonSet) error {
	if d.Status.ReadyReplicas != *d.Spec.Replicas {
		return fmt.Errorf("controller: %d/%d ready", d.Status.ReadyReplicas, *d.Spec.Replicas)
	}
	if ds.Status.DesiredNumberScheduled == 0 || ds.Status.NumberReady != ds.Status.DesiredNumberScheduled {
		return fmt.Errorf("node DaemonSet: %d/%d ready", ds.Status.NumberReady, ds.Status.DesiredNumberScheduled)
	}
	return nil
}

// containerLogs is the tail of every container log of namespace's pods on
// the node, for a failure message (the kubelet removes them with the pod).
func containerLogs(t *testing.T, n *harness.Node, namespace string) string {
	pods, err := n.Client.CoreV1().Pods(namespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, p := range pods.Items {
		for _, c := range p.Spec.Containers {
			lines := strings.Split(strings.TrimSpace(n.PodLog(namespace, p.Name, c.Name)), "\n")
			if len(lines) > 15 {
				lines = lines[len(lines)-15:]
			}
			fmt.Fprintf(&b, "--- %s/%s:\n%s\n", p.Name, c.Name, strings.Join(lines, "\n"))
		}
	}
	return b.String()
}
