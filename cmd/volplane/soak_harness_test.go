package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/volplane/volplane/internal/bundle"
	"github.com/volplane/volplane/internal/controller/manager"
)

// The harness of the soak and leader election tests: the embedded control
// plane with the bundled drivers and the node agent (`volplane up
// --without-loops`) in one child process that can be killed and restarted
// on the same data dir and API server port, and the loops in `volplane
// controller` children split by role, each role with its replicas electing
// a leader, each child restarted by a supervisor when it exits (as a
// Deployment would), so that a test kills any of them at will.

// klogVerbosityEnv sets the klog verbosity of a child (the controllers
// have no flag for it): the soak's controllers log every attach, detach
// and failed driver call, so that a violation can be traced.
const klogVerbosityEnv = "VOLPLANE_TEST_KLOG_V"

func init() {
	if v := os.Getenv(klogVerbosityEnv); v != "" && os.Getenv(runMainEnv) == "1" {
		fs := flag.NewFlagSet("klog", flag.ContinueOnError)
		klog.InitFlags(fs)
		_ = fs.Set("v", v)
	}
}

// soakNodes is the number of simulated nodes.
const soakNodes = 2

// soakRole is a set of loops run by replicas that share one Lease.
type soakRole struct {
	name        string
	controllers []string
}

// soakRoles splits every loop over two roles: the binder, protection and
// the snapshot-controller's snapshot loop in one, everything that calls
// drivers or drives attach and expansion (the snapshotter too) in the
// other.
var soakRoles = []soakRole{
	{"bind", []string{manager.Binder, manager.PVCProtection, manager.PVProtection, manager.Snapshot}},
	{"csi", []string{manager.Provisioner, manager.Attacher, manager.Resizer, manager.AttachDetach, manager.Expander, manager.Snapshotter}},
}

// soakHarness is a running cluster and its controller children.
type soakHarness struct {
	t        *testing.T
	dir      string
	port     int
	faults   string
	up       *child
	rest     *rest.Config
	client   kubernetes.Interface
	mu       sync.Mutex
	replicas []*replica
}

// child is one child process with its log file.
type child struct {
	cmd  *exec.Cmd
	done chan error
}

// startHarness starts the cluster child on a fresh data dir; faults is a
// driver fault spec ("" for none).
func startHarness(t *testing.T, faults string) *soakHarness {
	t.Helper()
	dir, err := os.MkdirTemp("", "soak")
	if err != nil {
		t.Fatal(err)
	}
	h := &soakHarness{t: t, dir: dir, port: freePort(t), faults: faults}
	t.Cleanup(func() { h.teardown() })
	if err := h.startUp(); err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", filepath.Join(dir, "kubeconfig"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 100, 200
	h.rest = cfg
	if h.client, err = kubernetes.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	return h
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// startChild runs the test binary as volplane with args, its output
// appended to the log file name in the data dir. ready, if not "", is the
// start of the line that says it is up: startChild then waits for it.
func (h *soakHarness) startChild(name, ready string, args ...string) (*child, error) {
	cmd := volplane(h.t, args...)
	cmd.Env = append(cmd.Env, "KUBECONFIG=")
	if args[0] == "controller" {
		cmd.Env = append(cmd.Env, klogVerbosityEnv+"=2")
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	log, err := os.OpenFile(filepath.Join(h.dir, name+".log"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		log.Close()
		return nil, err
	}
	cmd.Stderr = log
	if err := cmd.Start(); err != nil {
		log.Close()
		return nil, err
	}
	c := &child{cmd: cmd, done: make(chan error, 1)}
	seen := make(chan struct{})
	go func() {
		scanner := bufio.NewScanner(stdout)
		signalled := ready == ""
		for scanner.Scan() {
			fmt.Fprintln(log, scanner.Text())
			if !signalled && strings.HasPrefix(scanner.Text(), ready) {
				close(seen)
				signalled = true
			}
		}
		c.done <- cmd.Wait()
		log.Close()
	}()
	if ready == "" {
		return c, nil
	}
	select {
	case <-seen:
		return c, nil
	case err := <-c.done:
		c.done <- err
		return nil, fmt.Errorf("%s exited before it was ready: %v (log %s)", name, err, log.Name())
	case <-time.After(4 * time.Minute):
		_ = cmd.Process.Kill()
		return nil, fmt.Errorf("%s not ready after 4 minutes (log %s)", name, log.Name())
	}
}

// startUp starts (or restarts) the cluster child and waits until it is up.
func (h *soakHarness) startUp() error {
	args := []string{"up", "--data-dir", h.dir, "--nodes", strconv.Itoa(soakNodes), "--without-loops",
		"--apiserver-port", strconv.Itoa(h.port), "--hostpath-capacity", "10Ti"}
	if h.faults != "" {
		args = append(args, "--inject-faults", h.faults)
	}
	c, err := h.startChild("up", "volplane is up", args...)
	if err != nil {
		return err
	}
	h.up = c
	return nil
}

// killUp SIGKILLs the cluster child: API server, etcd, drivers and node
// agent all die at once, mid-write.
func (h *soakHarness) killUp() {
	_ = h.up.cmd.Process.Kill()
	<-h.up.done
}

// replica is one supervised `volplane controller` of a role.
type replica struct {
	role    soakRole
	index   int
	mu      sync.Mutex
	current *child
	// kills counts SIGKILLs by the test, exits the exits it did not cause
	// (a leader that lost its Lease while the API server was down).
	kills, exits int
	stop         chan struct{}
	stopped      chan struct{}
}

// startReplicas starts n supervised replicas of every role.
func (h *soakHarness) startReplicas(n int) {
	for _, role := range soakRoles {
		for i := range n {
			r := &replica{role: role, index: i, stop: make(chan struct{}), stopped: make(chan struct{})}
			h.replicas = append(h.replicas, r)
			go h.supervise(r)
		}
	}
}

// controllerArgs are a role's command line: leader election on with short
// timings, every bundled driver's socket.
func (h *soakHarness) controllerArgs(role soakRole) []string {
	args := []string{"controller", "--kubeconfig", filepath.Join(h.dir, "kubeconfig"),
		"--controllers", strings.Join(role.controllers, ","), "--metrics-bind-address", "",
		"--kube-api-qps", "100", "--kube-api-burst", "200",
		"--leader-elect-namespace", testLeaseNSName, "--leader-elect-name", "soak-" + role.name,
		"--leader-elect-lease-duration", testLease.String(), "--leader-elect-renew-deadline", testRenew.String(),
		"--leader-elect-retry-period", testRetry.String()}
	for _, e := range h.endpoints() {
		args = append(args, "--csi-endpoint", e)
	}
	return args
}

// endpoints are the controller sockets of the bundled drivers.
func (h *soakHarness) endpoints() []string {
	var out []string
	for i := 1; i <= soakNodes; i++ {
		out = append(out, "unix://"+filepath.Join(h.dir, "csi", fmt.Sprintf("node-%d.sock", i)))
	}
	return append(out, "unix://"+filepath.Join(h.dir, "csi", "network.sock"))
}

// supervise keeps r running until r.stop: a child that exits, killed or
// not, is started again a moment later.
func (h *soakHarness) supervise(r *replica) {
	defer close(r.stopped)
	name := fmt.Sprintf("controller-%s-%d", r.role.name, r.index)
	for {
		c, err := h.startChild(name, "", h.controllerArgs(r.role)...)

		if err != nil {
			h.t.Errorf("starting %s: %v", name, err)
			return
		}
		r.mu.Lock()
		r.current = c
		r.mu.Unlock()
		select {
		case <-r.stop:
			_ = c.cmd.Process.Signal(syscall.SIGTERM)
			select {
			case <-c.done:
			case <-time.After(30 * time.Second):
				_ = c.cmd.Process.Kill()
				<-c.done
			}
			return
		case <-c.done:
		}
		r.mu.Lock()
		if r.current == c { // not killed by the test
			r.exits++
		}
		r.current = nil
		r.mu.Unlock()
		select {
		case <-r.stop:
			return
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// kill SIGKILLs the replica's process, if it runs; the supervisor starts
// another. It says whether there was one to kill.
func (r *replica) kill() bool {
	r.mu.Lock()
	c := r.current
	if c != nil {
		r.current = nil
		r.kills++
	}
	r.mu.Unlock()
	if c == nil {
		return false
	}
	_ = c.cmd.Process.Kill()
	return true
}

func (r *replica) pid() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.current == nil {
		return 0
	}
	return r.current.cmd.Process.Pid
}

// stopReplicas stops every replica with SIGTERM and waits.
func (h *soakHarness) stopReplicas() {
	for _, r := range h.replicas {
		close(r.stop)
	}
	for _, r := range h.replicas {
		<-r.stopped
	}
	h.replicas = nil
}

// leader is the replica of role holding its Lease now, or nil.
func (h *soakHarness) leader(ctx context.Context, role string) *replica {
	lease, err := h.client.CoordinationV1().Leases(testLeaseNSName).Get(ctx, "soak-"+role, metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil {
		return nil
	}
	pid := identityPid(*lease.Spec.HolderIdentity)
	for _, r := range h.replicas {
		if r.role.name == role && pid != 0 && r.pid() == pid {
			return r
		}
	}
	return nil
}

// restarts sums the kills and the other exits of every replica.
func (h *soakHarness) restarts() (kills, exits int) {
	for _, r := range h.replicas {
		r.mu.Lock()
		kills, exits = kills+r.kills, exits+r.exits
		r.mu.Unlock()
	}
	return kills, exits
}

// injectedFaults counts the faults the drivers logged, in every run of the
// cluster child (its log is appended to).
func (h *soakHarness) injectedFaults() int {
	data, err := os.ReadFile(filepath.Join(h.dir, "logs", "control-plane.log"))
	if err != nil {
		return -1
	}
	return strings.Count(string(data), `"Controller call"`) - strings.Count(string(data), `fault="none"`)
}

// teardown stops everything, unmounts what the node agent left mounted
// under the data dir and removes it. On failure the data dir is kept, with
// every log, and named.
func (h *soakHarness) teardown() {
	if h.replicas != nil {
		h.stopReplicas()
	}
	if h.up != nil {
		_ = h.up.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-h.up.done:
		case <-time.After(90 * time.Second):
			_ = h.up.cmd.Process.Kill()
			<-h.up.done
		}
	}
	unmountUnder(h.dir)
	if h.t.Failed() {
		h.t.Logf("soak data dir, with the logs of every process, kept in %s", h.dir)
		return
	}
	_ = os.RemoveAll(h.dir)
}

// unmountUnder lazily unmounts every mount below dir, deepest first.
func unmountUnder(dir string) {
	points := mountsUnder(dir)
	for i := len(points) - 1; i >= 0; i-- {
		_ = syscall.Unmount(points[i], syscall.MNT_DETACH)
	}
}

// mountsUnder lists the mount points below dir, in mount order.
func mountsUnder(dir string) []string {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var points []string
	for line := range strings.SplitSeq(string(data), "\n") {
		fields := strings.Fields(line)
		if len(fields) > 4 && strings.HasPrefix(fields[4], dir+"/") {
			points = append(points, fields[4])
		}
	}
	return points
}

// classes of the workload: the bundle's and the two static ones.
var (
	soakDynamicClasses = []string{bundle.ImmediateClass, bundle.WaitClass, bundle.NetworkClass}
	staticRetainClass  = "soak-static-retain"
	staticDeleteClass  = "soak-static-delete"
)
