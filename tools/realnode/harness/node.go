package harness

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// PauseImage and BusyboxImage are assembled by Start and imported into the
// node's containerd (no registry is reachable: imagePullPolicy Never).
const (
	PauseImage   = "localhost/realnode/pause:1"
	BusyboxImage = "localhost/realnode/busybox:1"
)

// Node is a running real node and the control plane it joined.
type Node struct {
	Name, IP, PodCIDR string
	// Work holds everything of the run: logs, kubelet root, containerd.
	Work    string
	Bin     Binaries
	Netns   string
	DataDir string // of `volplane up`
	// Admin is the admin kubeconfig of `volplane up`; Client uses it.
	Admin  string
	REST   *rest.Config
	Client kubernetes.Interface
	// KubeletRoot is the kubelet's default --root-dir and DriverData the
	// data dir deploy/node.yaml gives the bundled driver: deploy/ applies
	// unpatched. Start refuses to run when either exists (another
	// kubelet's) and removes both at the end.
	KubeletRoot, DriverData string
	// ContainerdSock is the node's CRI endpoint.
	ContainerdSock string
	// Steps are the wall times of Start's steps, in order.
	Steps []Step

	cgroupRoot                   string
	up, containerd, kubelet, kpx *Process
}

// Step is one timed step of Start.
type Step struct {
	Name string
	Took time.Duration
}

func (n *Node) step(name string, began time.Time) {
	n.Steps = append(n.Steps, Step{name, time.Since(began).Round(10 * time.Millisecond)})
}

// Start builds what is missing and starts a real node named realnode-1 at
// 10.250.0.1 with pods in 10.251.0.0/24, and returns once the Node is
// Ready and kube-proxy has written the `kubernetes` Service's rules.
func Start(t *testing.T) *Node {
	t.Helper()
	work, err := os.MkdirTemp("", "realnode-")
	if err != nil {
		t.Fatal(err)
	}
	n := &Node{Name: "realnode-1", IP: "10.250.0.1", PodCIDR: "10.251.0.0/24", Work: work,
		Netns: fmt.Sprintf("realnode-%d", os.Getpid()), cgroupRoot: fmt.Sprintf("realnode-%d", os.Getpid()),
		KubeletRoot: KubeletRoot, DriverData: DriverData, ContainerdSock: filepath.Join(work, "containerd.sock"),
		DataDir: filepath.Join(work, "up")}
	n.Admin = filepath.Join(n.DataDir, "kubeconfig")
	// First registered, last to run: nothing may be left.
	watch, err := snapshotHost(n)
	if err != nil {
		_ = os.Remove(work)
		t.Fatal(err)
	}
	t.Cleanup(func() { watch.verify(t) })
	t.Logf("work dir %s, netns %s", work, n.Netns)

	began := time.Now()
	n.Bin = EnsureBinaries(t, work)
	n.step("binaries", began)
	n.startUp(t)
	began = time.Now()
	makeNetns(t, n.Netns, n.IP)
	relay(t, n.Netns, n.IP, n.apiPort(t))
	n.sharedWork(t)
	n.makeCgroups(t)
	n.step("netns, relay, mounts, cgroups", began)
	n.startContainerd(t)
	n.importImages(t)
	n.startKubelet(t)
	n.startKubeProxy(t)
	return n
}

// startUp runs `volplane up --control-plane-only` advertising the node's
// address, the one kube-proxy sends the `kubernetes` Service to.
func (n *Node) startUp(t *testing.T) {
	began := time.Now()
	p, err := start(n.Work, "", "volplane-up", n.Bin.Volplane, "up", "--control-plane-only",
		"--data-dir", n.DataDir, "--advertise-address", n.IP)
	if err != nil {
		t.Fatal(err)
	}
	n.up = p
	t.Cleanup(func() { p.Stop(60 * time.Second) })
	if err := WaitFor(4*time.Minute, func() error {
		if done, err := p.Exited(); done {
			t.Fatalf("volplane up exited: %v\n%s", err, p.Tail(30))
		}
		b, _ := os.ReadFile(p.Log)
		if !strings.Contains(string(b), "volplane is up") {
			return fmt.Errorf("volplane up not up")
		}
		return nil
	}); err != nil {
		t.Fatalf("%v\n%s", err, p.Tail(30))
	}
	if n.REST, err = clientcmd.BuildConfigFromFlags("", n.Admin); err != nil {
		t.Fatal(err)
	}
	n.Client = kubernetes.NewForConfigOrDie(n.REST)
	n.step("volplane up --control-plane-only", began)
}

func (n *Node) apiPort(t *testing.T) int {
	u, err := url.Parse(n.REST.Host)
	if err != nil {
		t.Fatal(err)
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		t.Fatalf("API server %s: %v", n.REST.Host, err)
	}
	return port
}

// APIServer is the API server's URL as the node and its pods reach it.
func (n *Node) APIServer(t *testing.T) string {
	return fmt.Sprintf("https://%s:%d", n.IP, n.apiPort(t))
}

// sharedWork bind-mounts the work dir, the kubelet's root dir and the
// driver's data dir each on itself, rshared: `/` is a private mount here and
// the driver's Bidirectional mounts need shared ones. Their cleanups (after
// the kubelet's and containerd's) unmount whatever is left under them; the
// two host dirs are removed by the leftover check.
func (n *Node) sharedWork(t *testing.T) {
	for _, d := range []string{n.Work, n.KubeletRoot, n.DriverData} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		run(t, "mount", "--bind", d, d)
		t.Cleanup(func() { unmountUnder(t, d) })
		run(t, "mount", "--make-rshared", d)
	}
	if err := os.MkdirAll(filepath.Join(n.Work, "pod-logs"), 0o755); err != nil {
		t.Fatal(err)
	}
}

func (n *Node) startContainerd(t *testing.T) {
	began := time.Now()
	if err := writeCNI(n); err != nil {
		t.Fatal(err)
	}
	if err := writeContainerd(n); err != nil {
		t.Fatal(err)
	}
	p, err := start(n.Work, n.Netns, "containerd", n.Bin.Path("containerd"), "--config", filepath.Join(n.Work, "containerd.toml"))
	if err != nil {
		t.Fatal(err)
	}
	n.containerd = p
	t.Cleanup(func() { n.stopContainerd(t) })
	if err := WaitFor(time.Minute, func() error {
		if done, err := p.Exited(); done {
			t.Fatalf("containerd exited: %v\n%s", err, p.Tail(20))
		}
		_, err := runErr(n.Bin.Path("ctr"), "--address", n.ContainerdSock, "version")
		return err
	}); err != nil {
		t.Fatalf("containerd: %v\n%s", err, p.Tail(20))
	}
	n.step("containerd", began)
}

// stopContainerd kills what the kubelet left running, then containerd; the
// shims and containers that outlive it are found by the leftover sweep.
func (n *Node) stopContainerd(t *testing.T) {
	ctr := []string{n.Bin.Path("ctr"), "--address", n.ContainerdSock, "-n", "k8s.io"}
	out, _ := runErr(append(ctr, "tasks", "ls", "-q")...)
	for _, id := range strings.Fields(out) {
		_, _ = runErr(append(ctr, "tasks", "kill", "-s", "KILL", id)...)
		_, _ = runErr(append(ctr, "tasks", "rm", "-f", id)...)
	}
	n.containerd.Stop(10 * time.Second)
	killUnder(t, n.Work, n.cgroupRoot)
}

// importImages assembles the pause and busybox images with mkimage and
// imports them.
func (n *Node) importImages(t *testing.T) {
	began := time.Now()
	pause := filepath.Join(n.Work, "pause.tar")
	run(t, n.Bin.Path("mkimage"), "-tag", PauseImage, "-out", pause, "-file", n.Bin.Path("pause")+"=/pause", "-entrypoint", "/pause")
	args := []string{"-tag", BusyboxImage, "-out", filepath.Join(n.Work, "busybox.tar"), "-file", "/bin/busybox=/bin/busybox", "-entrypoint", "/bin/sh"}
	for _, a := range []string{"sh", "echo", "cat", "sleep", "ls", "mount", "umount", "mkdir", "df", "id", "nc", "wget", "env"} {
		args = append(args, "-link", "/bin/"+a+"=busybox")
	}
	run(t, append([]string{n.Bin.Path("mkimage")}, args...)...)
	n.ImportImage(t, pause)
	n.ImportImage(t, filepath.Join(n.Work, "busybox.tar"))
	n.step("images (pause, busybox)", began)
}

// ImportImage imports an OCI archive into the node's containerd.
func (n *Node) ImportImage(t *testing.T, tar string) {
	t.Helper()
	run(t, n.Bin.Path("ctr"), "--address", n.ContainerdSock, "-n", "k8s.io", "images", "import", tar)
}

// WaitNode waits until the Node reports cond True.
func (n *Node) waitNodeReady(t *testing.T, p *Process) {
	err := WaitFor(2*time.Minute, func() error {
		if done, err := p.Exited(); done {
			t.Fatalf("%s exited: %v\n%s", p.Name, err, p.Tail(30))
		}
		node, err := n.Client.CoreV1().Nodes().Get(context.Background(), n.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("node %s not Ready: %v", n.Name, node.Status.Conditions)
	})
	if err != nil {
		t.Fatalf("%v\n%s", err, p.Tail(30))
	}
}
