package realnode

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/volplane/volplane/tools/realnode/harness"
)

// deployImageNames are the names deploy/ gives its images: the volplane
// image as deploy/kustomization.yaml's images: rewrites it (the name the
// README's docker build tags and Helm's default values use) and the
// registrar as deploy/node.yaml pins it. The node's containerd gets deploy/'s
// images under these names, so the default pull policy (IfNotPresent for a
// tagged image) finds them and deploy/ applies unpatched.
func deployImageNames(t *testing.T) (volplane, registrar string) {
	t.Helper()
	var k struct {
		Images []struct{ Name, NewName, NewTag string } `json:"images"`
	}
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "deploy", "kustomization.yaml"))
	if err == nil {
		err = yaml.Unmarshal(b, &k)
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, i := range k.Images {
		if i.Name == "volplane" {
			volplane = i.NewName + ":" + i.NewTag
		}
	}
	node, err := os.ReadFile(filepath.Join(repoRoot(t), "deploy", "node.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`image: (\S+/csi-node-driver-registrar:\S+)`).FindSubmatch(node); m != nil {
		registrar = string(m[1])
	}
	if volplane == ":" || volplane == "" || registrar == "" {
		t.Fatalf("deploy/'s image names: volplane %q (kustomization.yaml images:), registrar %q (node.yaml)", volplane, registrar)
	}
	return volplane, registrar
}

// deployImages makes deploy/'s images with `mkimage images` (the
// Dockerfile's build line and final stage; the registrar BIN holds) and
// imports them into the node's containerd under deploy/'s names. It
// rebuilds BIN/volplane-image with the Dockerfile's go build every run, so
// the image holds this checkout (a cold compile takes minutes, a warm one is
// a link).
func deployImages(t *testing.T, n *harness.Node) {
	t.Helper()
	reg := n.Bin.Path("csi-node-driver-registrar")
	out, err := exec.Command(reg, "--version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s --version: %v\n%s (tools/realnode/build.sh csi-node-driver-registrar builds it)", reg, err, out)
	}
	// Upstream's prints its version (REGISTRAR_SRC), the stand-in its name.
	regTag := "standin"
	if strings.Contains(string(out), "v2.17.0") {
		regTag = "v2.17.0"
	}
	t.Logf("registrar: %s (%s)", strings.TrimSpace(string(out)), map[string]string{
		"standin": "the stand-in tools/realnode/registrar", "v2.17.0": "upstream, from REGISTRAR_SRC"}[regTag])
	cmd := exec.Command("nice", "-n", "15", n.Bin.Path("mkimage"), "images", "-repo", repoRoot(t), "-bin", n.Bin.Dir,
		"-out", filepath.Join(n.Work, "images"), "-address", n.ContainerdSock, "-rebuild", "-registrar-version", regTag)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("mkimage images: %v\n%s", err, out)
	} else {
		t.Logf("mkimage images:\n%s", out)
	}
	volplane, registrar := deployImageNames(t)
	ctr := []string{"--address", n.ContainerdSock, "-n", "k8s.io", "images", "tag", "--force"}
	for local, name := range map[string]string{"localhost/volplane/volplane:dev": volplane,
		"localhost/volplane/csi-node-driver-registrar:" + regTag: registrar} {
		if out, err := exec.Command(n.Bin.Path("ctr"), append(ctr, local, name)...).CombinedOutput(); err != nil {
			t.Fatalf("ctr images tag %s %s: %v\n%s", local, name, err, out)
		}
		t.Logf("image %s is %s", name, local)
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
