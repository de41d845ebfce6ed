package stacktest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/volplane/volplane/internal/cluster"
	"github.com/volplane/volplane/internal/controller/loop"
)

// shared is the control plane of the running test binary. TestMain is
// process-wide by nature, so is this.
var shared *cluster.ControlPlane

// BinariesEnv names a directory of another release's kube-apiserver,
// kube-scheduler and kube-controller-manager to run the suite's control
// plane from (cluster.Config.RunComponent); tools/compat sets it.
const BinariesEnv = "VOLPLANE_TEST_KUBE_BINARIES"

// Main is the body of TestMain for a package whose tests need an API server:
// it starts a control plane with the given number of simulated nodes in a
// temporary dir, runs the tests and tears everything down. Each setup runs
// once the control plane is ready (to start controllers under test); the
// function it returns runs after the tests.
func Main(m *testing.M, nodes int, setup ...func(*cluster.ControlPlane) (teardown func(), err error)) {
	os.Exit(run(m, nodes, Options{}, setup))
}

// Options change the control plane of MainWith beyond its nodes.
type Options struct {
	// FeatureGates is passed to the embedded kube-apiserver and
	// kube-controller-manager (cluster.Config.FeatureGates), "Name=true,...":
	// a package of its own turns gates on, so the others keep the defaults.
	FeatureGates string
}

// MainWith is Main with Options.
func MainWith(m *testing.M, nodes int, opts Options, setup ...func(*cluster.ControlPlane) (teardown func(), err error)) {
	os.Exit(run(m, nodes, opts, setup))
}

func run(m *testing.M, nodes int, opts Options, setups []func(*cluster.ControlPlane) (func(), error)) int {
	dir, err := os.MkdirTemp("", "volplane-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "stacktest:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	defer keepLogs(dir) // runs after Stop: the whole log
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	began := time.Now()
	cfg := cluster.Config{DataDir: dir, Nodes: nodes, UnsafeNoFsync: true, FeatureGates: opts.FeatureGates}
	if bin := os.Getenv(BinariesEnv); bin != "" {
		cfg.RunComponent = binariesIn(bin)
	}
	cp, err := cluster.Start(ctx, cfg)
	for retry := 0; err != nil && retry < 3 && strings.Contains(err.Error(), "address already in use"); retry++ {
		// The ports are picked free, then bound: another test binary
		// may take one in between. Again, afresh, on other ports.
		fmt.Fprintln(os.Stderr, "stacktest: start control plane:", err, "(again on other ports)")
		if err = os.RemoveAll(dir); err == nil {
			err = os.Mkdir(dir, 0o700)
		}
		if err == nil {
			cp, err = cluster.Start(ctx, cfg)
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "stacktest: start control plane:", err)
		dumpLogs(dir)
		return 1
	}
	fmt.Fprintf(os.Stderr, "stacktest: control plane ready in %.1fs at %s\n", time.Since(began).Seconds(), cp.RESTConfig.Host)
	shared = cp
	defer cp.Stop()
	for _, setup := range setups {
		teardown, err := setup(cp)
		if err != nil {
			fmt.Fprintln(os.Stderr, "stacktest: setup:", err)
			return 1
		}
		defer teardown()
	}
	code := m.Run()
	if err := loop.Shared.Verify(); err != nil && code == 0 {
		// The loops of these tests ran in this process: one of them wrote
		// into an informer's object, which every sharer of that map sees.
		fmt.Fprintln(os.Stderr, "stacktest:", err)
		code = 1
	}
	if code != 0 {
		// Before Stop, so the tail shows the failure, not the shutdown.
		dumpLogs(dir)
	}
	return code
}

// keepLogs copies the whole control plane log to $VOLPLANE_TEST_LOG_DIR when
// that is set, for failures the tail does not explain.
func keepLogs(dir string) {
	dest := os.Getenv("VOLPLANE_TEST_LOG_DIR")
	if dest == "" {
		return
	}
	data, err := os.ReadFile(dir + "/logs/control-plane.log")
	if err == nil {
		err = os.WriteFile(fmt.Sprintf("%s/control-plane-%d.log", dest, os.Getpid()), data, 0o644)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "stacktest: keep logs:", err)
	}
}

// dumpLogs prints the tail of the control plane log so a CI failure can be
// understood from its output alone.
func dumpLogs(dir string) {
	data, err := os.ReadFile(dir + "/logs/control-plane.log")
	if err != nil {
		return
	}
	lines := strings.Split(string(data), "\n")
	if len(lines) > 60 {
		lines = lines[len(lines)-60:]
	}
	fmt.Fprintf(os.Stderr, "stacktest: last lines of the control plane log:\n%s\n", strings.Join(lines, "\n"))
}

// ControlPlane returns the package's control plane; the package's TestMain
// must call Main.
func ControlPlane(t testing.TB) *cluster.ControlPlane {
	t.Helper()
	if shared == nil {
		t.Fatal("stacktest: no control plane; call stacktest.Main from TestMain")
	}
	return shared
}

// Namespace creates a namespace for the calling test and deletes it when the
// test ends, so tests sharing a control plane do not see each other's objects.
func Namespace(t testing.TB) string {
	t.Helper()
	cp := ControlPlane(t)
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "test-"}}
	ns, err := cp.Client.CoreV1().Namespaces().Create(context.Background(), ns, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	t.Cleanup(func() {
		_ = cp.Client.CoreV1().Namespaces().Delete(context.Background(), ns.Name, metav1.DeleteOptions{})
	})
	// Pods are rejected until the controller manager gave the namespace its
	// default ServiceAccount.
	err = wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, time.Minute, true,
		func(ctx context.Context) (bool, error) {
			_, err := cp.Client.CoreV1().ServiceAccounts(ns.Name).Get(ctx, "default", metav1.GetOptions{})
			return err == nil, nil
		})
	if err != nil {
		t.Fatalf("namespace %s got no default service account: %v", ns.Name, err)
	}
	return ns.Name
}
