package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/volplane/volplane/internal/cluster"
)

// runMainEnv makes the test binary act as the volplane binary, so tests drive
// the real command line (flags, signals, exit codes) without a separate build.
const runMainEnv = "VOLPLANE_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		main()
		os.Exit(0)
	}
	code := m.Run()
	stopControlPlane()
	os.Exit(code)
}

// inProcess is the one embedded control plane the tests of this binary
// start in their own process (the others run `volplane up` children):
// kube-controller-manager registers its configz globally, so a second
// control plane cannot start in one process. Started by the first test
// that asks, with 3 nodes, stopped when every test is done; each test
// works in names of its own.
var inProcess struct {
	once sync.Once
	dir  string
	cp   *cluster.ControlPlane
	err  error
}

// controlPlane returns the in-process control plane, started on first use.
func controlPlane(t *testing.T) *cluster.ControlPlane {
	t.Helper()
	inProcess.once.Do(func() {
		if inProcess.dir, inProcess.err = os.MkdirTemp("", "vp-cmd-"); inProcess.err != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		inProcess.cp, inProcess.err = cluster.Start(ctx, cluster.Config{DataDir: inProcess.dir, Nodes: 3, UnsafeNoFsync: true})
	})
	if inProcess.err != nil {
		t.Fatalf("start control plane: %v", inProcess.err)
	}
	return inProcess.cp
}

func stopControlPlane() {
	if inProcess.cp != nil {
		inProcess.cp.Stop()
	}
	if inProcess.dir != "" {
		_ = os.RemoveAll(inProcess.dir)
	}
}

// volplane starts the volplane command line in a child process.
func volplane(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = append(os.Environ(), runMainEnv+"=1")
	return cmd
}

// upProcess is a running `volplane up` child.
type upProcess struct {
	cmd    *exec.Cmd
	output *bytes.Buffer
	done   chan error
	// metrics receives the URL of /metrics once up prints it.
	metrics chan string
}

// startUp runs `volplane up` on dir and waits until it says it is up.
func startUp(t *testing.T, dir string, extra ...string) *upProcess {
	t.Helper()
	cmd := volplane(t, append([]string{"up", "--data-dir", dir}, extra...)...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &upProcess{cmd: cmd, output: &bytes.Buffer{}, done: make(chan error, 1), metrics: make(chan string, 1)}
	cmd.Stderr = p.output
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	up := make(chan struct{})
	go func() {
		scanner := bufio.NewScanner(stdout)
		signalled := false
		for scanner.Scan() {
			p.output.WriteString(scanner.Text() + "\n")
			if !signalled && strings.HasPrefix(scanner.Text(), "volplane is up") {
				close(up)
				signalled = true
			}
			if url, ok := strings.CutPrefix(scanner.Text(), "Metrics: "); ok {
				p.metrics <- strings.Fields(url)[0]
			}
		}
		p.done <- cmd.Wait()
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	select {
	case <-up:
		return p
	case err := <-p.done:
		t.Fatalf("volplane up exited before it was up: %v\n%s", err, p.output)
	case <-time.After(4 * time.Minute):
		t.Fatalf("volplane up not up after 4 minutes\n%s", p.output)
	}
	return nil
}

// stop sends SIGTERM and requires a clean exit.
func (p *upProcess) stop(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.done:
		if err != nil {
			t.Fatalf("volplane up did not exit cleanly on SIGTERM: %v\n%s", err, p.output)
		}
	case <-time.After(90 * time.Second):
		t.Fatalf("volplane up still running 90s after SIGTERM\n%s", p.output)
	}
}

func clientFor(t *testing.T, dir string) kubernetes.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	return kubernetes.NewForConfigOrDie(cfg)
}

func TestUpKeepsStateAcrossRestartsAndLocksItsDataDir(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	first := startUp(t, dir, "--nodes", "2", "--network-max-volumes-per-node", "5")
	// The nodes report the network driver's attach limit in their CSINodes.
	waitKubectl(t, dir, "5", "get", "csinode", "node-2", "-o",
		`jsonpath={.spec.drivers[?(@.name=="network.csi.volplane.io")].allocatable.count}`)

	client := clientFor(t, dir)
	marker := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "survivor"}, Data: map[string]string{"k": "v"}}
	if _, err := client.CoreV1().ConfigMaps("default").Create(ctx, marker, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	out, err := kubectl(t, dir, "get", "nodes", "-o", "name")
	if err != nil {
		t.Fatalf("volplane kubectl get nodes: %v\n%s", err, out)
	}
	if !strings.Contains(out, "node/node-1") || !strings.Contains(out, "node/node-2") {
		t.Errorf("volplane kubectl get nodes printed %q, want node-1 and node-2", out)
	}

	// The README walkthrough: every example applied with kubectl ends Bound —
	// the static pair by the binder, the others by the bundled driver through
	// the provisioner (the WaitForFirstConsumer one once its pod is scheduled).
	for _, example := range []string{"static.yaml", "claim.yaml", "wait-for-first-consumer.yaml"} {
		path := filepath.Join("..", "..", "examples", example)
		if out, err := kubectl(t, dir, "apply", "-f", path); err != nil {
			t.Fatalf("volplane kubectl apply -f %s: %v\n%s", path, err, out)
		}
	}
	for _, claim := range []string{"static", "data", "scratch"} {
		waitClaimBound(t, client, "default", claim)
	}
	provisioned, err := client.CoreV1().PersistentVolumeClaims("default").Get(ctx, "data", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The loops' metrics are served on the address up prints.
	select {
	case url := <-first.metrics:
		body := httpGetBody(t, url)
		if !strings.Contains(body, `pv_collector_bound_pvc_count{namespace="default",storage_class="volplane-hostpath"`) {
			t.Errorf("%s lacks the bound claim of volplane-hostpath:\n%.2000s", url, body)
		}
	case <-time.After(30 * time.Second):
		t.Error("up never printed where its metrics are served")
	}

	second, err := volplane(t, "up", "--data-dir", dir).CombinedOutput()
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) {
		t.Fatalf("a second up on a data dir in use must fail, got %v\n%s", err, second)
	}
	if !strings.Contains(string(second), "used by another volplane") {
		t.Errorf("second up said %q, want it to name the other volplane", second)
	}

	// The README walkthrough of a network volume, first half: the writer
	// pod runs on node-1 and what it writes lands in the backend volume.
	// The second half runs after the restart.
	network := startNetworkWalkthrough(t, dir)
	network.grows(t)

	// A clean stop unmounts what the nodes mounted; the restart mounts
	// again what the still Running writer pod needs, with its data.
	first.stop(t)
	nothingMountedAfterStop(t, dir)
	restarted := startUp(t, dir, "--nodes", "2")
	network.mountedAgain(t)
	got, err := clientFor(t, dir).CoreV1().ConfigMaps("default").Get(ctx, "survivor", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("object created before the restart is gone: %v", err)
	}
	if got.Data["k"] != "v" {
		t.Errorf("object data after restart = %v", got.Data)
	}
	// The provisioned volume and its binding survive too.
	waitClaimBound(t, clientFor(t, dir), "default", "data")
	if _, err := clientFor(t, dir).CoreV1().PersistentVolumes().Get(ctx, provisioned.Spec.VolumeName, metav1.GetOptions{}); err != nil {
		t.Errorf("provisioned PV %s after restart: %v", provisioned.Spec.VolumeName, err)
	}
	snapshotWalkthrough(t, dir)
	deleteReclaimsWithNoUserAction(t, dir, provisioned.Spec.VolumeName)
	network.followsItsPod(t)
	// The pods still run (uses-scratch, reader, db): the clean stop
	// unmounts their volumes, so the data dir (t.TempDir) can go.
	restarted.stop(t)
	nothingMountedAfterStop(t, dir)
}

// deleteReclaimsWithNoUserAction is the end of the README walkthrough:
// `kubectl delete pvc data` returns once the claim is gone (the protection
// loops of up release it), and its Delete-policy PV and backend volume
// follow, with nothing else done.
func deleteReclaimsWithNoUserAction(t *testing.T, dir, pvName string) {
	t.Helper()
	client := clientFor(t, dir)
	pv, err := client.CoreV1().PersistentVolumes().Get(context.Background(), pvName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	backend := filepath.Join(dir, "hostpath", "*", "volumes", pv.Spec.CSI.VolumeHandle+"*")
	if found, _ := filepath.Glob(backend); len(found) == 0 {
		t.Fatalf("no backend volume at %s before the delete", backend)
	}
	if out, err := kubectl(t, dir, "delete", "pvc", "data", "--timeout=60s"); err != nil {
		t.Fatalf("volplane kubectl delete pvc data: %v\n%s", err, out)
	}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		_, err := client.CoreV1().PersistentVolumes().Get(context.Background(), pvName, metav1.GetOptions{})
		found, _ := filepath.Glob(backend)
		if apierrors.IsNotFound(err) && len(found) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("30s after the claim went: PV %s lookup %v, backend volume %v", pvName, err, found)
		}
	}
}

func waitClaimBound(t *testing.T, client kubernetes.Interface, ns, name string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		c, err := client.CoreV1().PersistentVolumeClaims(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err == nil && c.Status.Phase == corev1.ClaimBound {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("claim %s/%s not Bound under volplane up", ns, name)
}

func kubectl(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	cmd := volplane(t, append([]string{"kubectl"}, args...)...)
	cmd.Env = append(cmd.Env, "KUBECONFIG=", dataDirEnv+"="+dir)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestUnknownSubcommandFails(t *testing.T) {
	out, err := volplane(t, "frobnicate").CombinedOutput()
	if err == nil {
		t.Fatalf("volplane frobnicate succeeded: %s", out)
	}
	if !strings.Contains(string(out), `unknown command "frobnicate"`) {
		t.Errorf("output %q does not name the unknown command", out)
	}
}

func TestControllerRejectsBadInvocationsClearly(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	kubeconfig := unreachableKubeconfig(t)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"controller"}, "no cluster: pass --kubeconfig"},
		{[]string{"controller", "--kubeconfig", kubeconfig, "--controllers", "populator"}, `controller "populator" is not implemented yet`},
		{[]string{"controller", "--kubeconfig", kubeconfig, "--controllers", "snapshotter"}, "the snapshotter needs at least one CSI endpoint"},
		{[]string{"controller", "--kubeconfig", kubeconfig, "--controllers", "resizer"}, "the resizer needs at least one CSI endpoint"},
		{[]string{"controller", "--kubeconfig", kubeconfig, "--controllers", "attacher"}, "the attacher needs at least one CSI endpoint"},
		{[]string{"controller", "--kubeconfig", filepath.Join(t.TempDir(), "missing")}, "kubeconfig"},
		{[]string{"controller", "--kubeconfig", kubeconfig, "--workers", "0"}, "--workers 0: want at least 1"},
		{[]string{"controller", "--kubeconfig", kubeconfig, "--resync-period", "0s"}, "--resync-period 0s: want a positive duration"},
		{[]string{"controller", "--kubeconfig", kubeconfig, "--kube-api-burst", "0"}, "--kube-api-burst 0: want at least 1"},
		// Refused before any cluster starts.
		{[]string{"conformance", "--scenario", "nope"}, "--scenario nope: want one of dynamic-provisioning-mount"},
		{[]string{"conformance", "-o", "yaml"}, "-o yaml: want text or json"},
		{[]string{"conformance", "--nodes", "0"}, "--nodes 0: want at least 1"},
		{[]string{"conformance", "--driver", "x.example.com=/bin/d"}, "must take {endpoint}"},
		{[]string{"conformance", "--driver", "x.example.com=/bin/d {endpoint}", "--driver-block", "y.example.com"}, `--driver-block y.example.com: no --driver or --driver-endpoint names driver "y.example.com"`},
		{[]string{"conformance", "--driver-access-modes", "x.example.com=ReadWriteSometimes"}, `"ReadWriteSometimes" is not an access mode`},
		{[]string{"up", "--driver", "x.example.com=/bin/d"}, "must take {endpoint}"},
		{[]string{"up", "--driver", "x.example.com=/bin/d {endpoint}", "--fake-mounts"}, "--fake-mounts and --inject-faults change the bundled drivers"},
	}
	for _, c := range cases {
		root := newRootCommand()
		root.SetArgs(c.args)
		root.SetOut(io.Discard)
		err := root.Execute()
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("volplane %s: error = %v, want it to say %q", strings.Join(c.args, " "), err, c.want)
		}
	}
}

// unreachableKubeconfig writes a kubeconfig naming a cluster nobody serves:
// enough for flag checks, which must fail before any request is made.
func unreachableKubeconfig(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func httpGetBody(t *testing.T, url string) string {
	t.Helper()
	client := http.Client{Timeout: 10 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %v", url, resp.Status, err)
	}
	return string(b)
}
