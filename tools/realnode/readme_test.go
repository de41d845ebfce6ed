package realnode

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/tools/realnode/harness"
)

// readmeSection is the part of README.md whose every command the real node
// runs, verbatim.
const readmeSection = "## Deploying to a cluster"

// dockerLines are README's two commands that need Docker and a registry,
// which this machine lacks: the test checks they are exactly these and
// makes the same image with mkimage (the Dockerfile's own build line and
// final stage) instead, imported into the node's containerd under the name
// they push.
var dockerLines = []string{
	"docker build -t ghcr.io/volplane/volplane:v0.1.0 .",
	"docker push ghcr.io/volplane/volplane:v0.1.0",
}

// classesLine is README's first uninstall command: the classes go while
// the controller still runs, as it alone lifts the VolumeAttributesClasses'
// vac-protection finalizers (deleted with the controller, they stayed being
// deleted and kubectl waited on them for ever). The Deploy scenarios run on
// the kubectl install before it.
const classesLine = "kubectl delete -f deploy/classes.yaml --ignore-not-found"

// uninstallLine is README's command after which deploy/ is gone.
// --ignore-not-found: the snapshot classes are gone with their CRDs, which
// kubectl deletes first (without it kubectl fails on them: "the server
// could not find the requested resource").
const uninstallLine = "kubectl delete -k deploy/ --ignore-not-found"

// readmeCommands reads every ```sh block of README's section: comments
// (a # at the start of a line or after a blank) dropped, lines ending in a
// backslash joined with the next, blank lines skipped.
func readmeCommands(readme string) ([]string, error) {
	_, rest, ok := strings.Cut(readme, "\n"+readmeSection+"\n")
	if !ok {
		return nil, fmt.Errorf("README.md has no %q section", readmeSection)
	}
	if i := strings.Index(rest, "\n## "); i >= 0 {
		rest = rest[:i]
	}
	var cmds []string
	in, pending := false, ""
	for _, l := range strings.Split(rest, "\n") {
		switch {
		case !in && strings.TrimSpace(l) == "```sh":
			in = true
			continue
		case in && strings.TrimSpace(l) == "```":
			if pending != "" {
				return nil, fmt.Errorf("continuation line at the end of a block: %q", pending)
			}
			in = false
			continue
		case !in:
			continue
		}
		if i := commentStart(l); i >= 0 {
			l = l[:i]
		}
		l = strings.TrimSpace(l)
		if strings.HasSuffix(l, `\`) {
			pending += strings.TrimSuffix(l, `\`)
			continue
		}
		l = strings.TrimSpace(pending + l)
		pending = ""
		if l != "" {
			cmds = append(cmds, strings.Join(strings.Fields(l), " "))
		}
	}
	if in {
		return nil, fmt.Errorf("an unclosed ```sh block in %q", readmeSection)
	}
	return cmds, nil
}

var commentRE = regexp.MustCompile(`(^|\s)#`)

func commentStart(l string) int {
	if m := commentRE.FindStringIndex(l); m != nil {
		return m[1] - 1
	}
	return -1
}

// TestReadmeCommands checks the parser on README itself, without a node:
// the section starts with the two Docker lines and holds the uninstall
// that splits the kubectl install from the Helm one.
func TestReadmeCommands(t *testing.T) {
	cmds := readmeFile(t)
	if len(cmds) < 3 || cmds[0] != dockerLines[0] || cmds[1] != dockerLines[1] {
		t.Fatalf("README's %s must begin with exactly\n%s\ngot %q", readmeSection, strings.Join(dockerLines, "\n"), cmds)
	}
	var uninstall, helm bool
	for _, c := range cmds[2:] {
		uninstall = uninstall || (c == uninstallLine && slices.Contains(cmds, classesLine) && slices.Index(cmds, classesLine) < slices.Index(cmds, uninstallLine))
		helm = helm || strings.HasPrefix(c, "helm install ")
		if strings.HasPrefix(c, "docker ") {
			t.Errorf("a docker command the test cannot run: %q", c)
		}
	}
	if !uninstall || !helm {
		t.Errorf("README's commands lack %q after %q, or a helm install: %q", uninstallLine, classesLine, cmds)
	}
	got, err := readmeCommands("x\n" + readmeSection + "\n```sh\na --x \\\n  --y  # c\n# only a comment\n\nb 'c#d'\n```\n## Next\n```sh\nz\n```\n")
	if err != nil || strings.Join(got, "|") != "a --x --y|b 'c#d'" {
		t.Errorf("parser: %q %v", got, err)
	}
}

func readmeFile(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	cmds, err := readmeCommands(string(b))
	if err != nil {
		t.Fatal(err)
	}
	return cmds
}

func repoRoot(t *testing.T) string {
	dir, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// operator is a shell like an operator's: kubectl (a wrapper of the kubectl
// built into volplane) and helm (build.sh's, v4.2.0) on PATH, KUBECONFIG the
// admin kubeconfig of `up`, HOME (kubectl's and Helm's caches) in the work
// dir, the repository as working directory.
type operator struct {
	dir string
	env []string
}

func newOperator(t *testing.T, n *harness.Node) *operator {
	t.Helper()
	bin := filepath.Join(n.Work, "operator", "bin")
	home := filepath.Join(n.Work, "operator", "home")
	for _, d := range []string{bin, home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	wrapper := fmt.Sprintf("#!/bin/sh\nexport KUBECONFIG=%q\nexec %q kubectl \"$@\"\n", n.Admin, n.Bin.Volplane)
	if err := os.WriteFile(filepath.Join(bin, "kubectl"), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	helm := n.Bin.Path("helm")
	if _, err := os.Stat(helm); err != nil {
		t.Fatalf("no %s: tools/realnode/build.sh helm builds it", helm)
	}
	if err := os.Symlink(helm, filepath.Join(bin, "helm")); err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + bin + ":" + os.Getenv("PATH"), "HOME=" + home, "KUBECONFIG=" + n.Admin}
	for _, e := range os.Environ() {
		if k, _, _ := strings.Cut(e, "="); k != "PATH" && k != "HOME" && k != "KUBECONFIG" && !strings.HasPrefix(k, "HELM_") {
			env = append(env, e)
		}
	}
	return &operator{dir: repoRoot(t), env: env}
}

// run runs one README command with sh -c and fails the test if it fails.
func (o *operator) run(t *testing.T, cmd string) string {
	t.Helper()
	began := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	c := exec.CommandContext(ctx, "sh", "-c", cmd)
	c.Dir, c.Env = o.dir, o.env
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("README command %q: %v after %s\n%s", cmd, err, time.Since(began).Round(10*time.Millisecond), out)
	}
	t.Logf("$ %s   (%s)\n%s", cmd, time.Since(began).Round(10*time.Millisecond), strings.TrimRight(string(out), "\n"))
	return string(out)
}

// quiet runs a command of the test's own (a cleanup), not README's.
func (o *operator) quiet(cmd string) string {
	c := exec.Command("sh", "-c", cmd)
	c.Dir, c.Env = o.dir, o.env
	out, _ := c.CombinedOutput()
	return string(out)
}

// readme is README's sequence on the node, split at classesLine.
type readme struct {
	op   *operator
	cmds []string
	next int
}

// applyDeploy runs README's commands up to its uninstall: the two Docker
// lines replaced by mkimage (deployImages), then every kubectl command
// verbatim (install, rollout status), and checks deploy/ is Ready. Its
// cleanup deletes deploy/ if the test stops before README's own uninstall.
func applyDeploy(t *testing.T, n *harness.Node) *readme {
	t.Helper()
	r := &readme{op: newOperator(t, n), cmds: readmeFile(t)}
	if r.cmds[0] != dockerLines[0] || r.cmds[1] != dockerLines[1] {
		t.Fatalf("README's %s must begin with exactly\n%s\ngot %q", readmeSection, strings.Join(dockerLines, "\n"), r.cmds[:2])
	}
	began := time.Now()
	deployImages(t, n)
	t.Logf("in place of %q: deploy/'s images made and imported in %s", dockerLines, time.Since(began).Round(time.Second))
	r.next = 2
	t.Cleanup(func() {
		if out := r.op.quiet(classesLine + " --timeout=1m; " + uninstallLine + " --timeout=2m"); r.next < len(r.cmds) {
			t.Logf("cleanup: %s; %s\n%s", classesLine, uninstallLine, out)
		}
	})
	began = time.Now()
	for ; r.next < len(r.cmds) && r.cmds[r.next] != classesLine; r.next++ {
		r.op.run(t, r.cmds[r.next])
	}
	if err := deployReady(n, 2); err != nil {
		t.Fatalf("after README's install: %v\n%s", err, containerLogs(t, n, "volplane"))
	}
	if err := harness.WaitFor(time.Minute, func() error { return registered(n) }); err != nil {
		t.Fatalf("the registrar: %v\n%s", err, containerLogs(t, n, "volplane"))
	}
	t.Logf("the kubelet registered hostpath.csi.volplane.io (CSINode) %s after README's install began", time.Since(began).Round(10*time.Millisecond))
	t.Logf("README's kubectl install: deploy/ Ready in %s", time.Since(began).Round(10*time.Millisecond))
	return r
}

// uninstallAndHelm runs the rest of README once the scenarios are done:
// the kubectl uninstall (after the scenarios' claims are reclaimed, as an
// operator deletes their claims first), then the Helm install, the upgrade
// to 3 controller replicas, each Ready on the node, and the uninstall.
func (r *readme) uninstallAndHelm(t *testing.T, n *harness.Node) {
	t.Helper()
	ctx := context.Background()
	if err := harness.WaitFor(3*time.Minute, func() error {
		pvs, err := n.Client.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		if len(pvs.Items) > 0 {
			return fmt.Errorf("%d PV(s) left by the scenarios, e.g. %s", len(pvs.Items), pvs.Items[0].Name)
		}
		return nil
	}); err != nil {
		t.Errorf("before README's uninstall: %v", err)
	}
	if r.next >= len(r.cmds) {
		t.Fatalf("README has no %q", uninstallLine)
	}
	installed := false
	t.Cleanup(func() {
		if installed {
			t.Logf("cleanup: helm uninstall volplane\n%s", r.op.quiet("helm uninstall volplane --wait"))
		}
	})
	replicas := int32(2)
	began := time.Now()
	for ; r.next < len(r.cmds); r.next++ {
		cmd := r.cmds[r.next]
		r.op.run(t, cmd)
		switch {
		case cmd == uninstallLine:
			if err := harness.WaitFor(2*time.Minute, func() error { return goneNamespaces(n) }); err != nil {
				t.Fatalf("after %q: %v", cmd, err)
			}
			t.Logf("kubectl install removed %s after the scenarios", time.Since(began).Round(10*time.Millisecond))
			began = time.Now()
		case strings.HasPrefix(cmd, "helm install "):
			installed = true
		case strings.HasPrefix(cmd, "helm upgrade ") && strings.Contains(cmd, "controller.replicas=3"):
			replicas = 3
		case strings.HasPrefix(cmd, "helm uninstall "):
			installed = false
			if err := harness.WaitFor(2*time.Minute, func() error { return goneNamespaces(n) }); err != nil {
				t.Fatalf("after %q: %v", cmd, err)
			}
		case strings.Contains(cmd, "rollout status") && installed:
			if err := deployReady(n, replicas); err != nil {
				t.Fatalf("after %q: %v", cmd, err)
			}
			t.Logf("Helm release Ready with %d controller replicas, %s after the Helm install began", replicas, time.Since(began).Round(10*time.Millisecond))
		}
	}
}

// deployReady checks the controller Deployment has replicas Ready replicas
// and the node DaemonSet is Ready on the node.
func deployReady(n *harness.Node, replicas int32) error {
	ctx := context.Background()
	d, err := n.Client.AppsV1().Deployments("volplane").Get(ctx, "volplane-controller", metav1.GetOptions{})
	if err != nil {
		return err
	}
	ds, err := n.Client.AppsV1().DaemonSets("volplane").Get(ctx, "volplane-node", metav1.GetOptions{})
	if err != nil {
		return err
	}
	if *d.Spec.Replicas != replicas {
		return fmt.Errorf("controller: spec.replicas %d, want %d", *d.Spec.Replicas, replicas)
	}
	return ready(d, ds)
}

// registered checks the kubelet registered deploy/'s driver through the
// registrar: the node's CSINode lists it with its topology key.
func registered(n *harness.Node) error {
	c, err := n.Client.StorageV1().CSINodes().Get(context.Background(), n.Name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	for _, d := range c.Spec.Drivers {
		if d.Name == "hostpath.csi.volplane.io" {
			if d.NodeID != n.Name || len(d.TopologyKeys) == 0 {
				return fmt.Errorf("CSINode %s: driver %s with node ID %q, topology keys %v", n.Name, d.Name, d.NodeID, d.TopologyKeys)
			}
			return nil
		}
	}
	return fmt.Errorf("CSINode %s lists no hostpath.csi.volplane.io: %v", n.Name, c.Spec.Drivers)
}

// goneNamespaces checks deploy/'s namespaces and VolumeAttributesClasses
// no longer exist.
func goneNamespaces(n *harness.Node) error {
	for _, ns := range []string{"volplane", "volplane-nodes", "volplane-csi-sidecar"} {
		_, err := n.Client.CoreV1().Namespaces().Get(context.Background(), ns, metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("namespace %s still there (%v)", ns, err)
		}
	}
	// The classes too: a VolumeAttributesClass deleted after the controller
	// stays being deleted for ever (its vac-protection finalizer).
	for _, vac := range []string{"volplane-standard", "volplane-fast"} {
		_, err := n.Client.StorageV1().VolumeAttributesClasses().Get(context.Background(), vac, metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("VolumeAttributesClass %s still there (%v)", vac, err)
		}
	}
	return nil
}
