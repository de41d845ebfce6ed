package userdriver

import (
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/volplane/volplane/internal/endpoint"
)

// helperEnv makes the test binary play a driver: it serves a unix socket
// at its first argument and writes its pid into its second ({dir}).
const helperEnv = "USERDRIVER_TEST_DRIVER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "serve" {
		serveAsDriver(os.Args[len(os.Args)-3:])
		return
	}
	os.Exit(m.Run())
}

func serveAsDriver(args []string) {
	path, _ := endpoint.Parse(args[0])
	l, err := net.Listen("unix", path)
	if err != nil {
		os.Exit(3)
	}
	_ = os.WriteFile(filepath.Join(args[1], "pid"), []byte(strconv.Itoa(os.Getpid())+" "+args[2]), 0o600)
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM)
	<-stop
	_ = l.Close()
}

func pidOf(t *testing.T, dir string) (int, string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "pid"))
	if err != nil {
		t.Fatal(err)
	}
	pid, node, _ := strings.Cut(string(raw), " ")
	n, _ := strconv.Atoi(pid)
	return n, node
}

func alive(pid int) bool { return syscall.Kill(pid, 0) == nil }

func TestStartRestartStopTheDriversProcesses(t *testing.T) {
	t.Setenv(helperEnv, "serve")
	dir := t.TempDir()
	spec := Spec{Name: "x.example.com", Command: []string{os.Args[0], "-test.run=^$", "--", "{endpoint}", "{dir}", "{node}"}}
	d, err := Start(Config{DataDir: dir, Nodes: twoNodes, Specs: []Spec{spec}})
	if err != nil {
		t.Fatal(err)
	}
	defer d.Stop()
	if len(d.Endpoints) != 1 || len(d.NodeEndpoints["node-2"]) != 1 || d.Nodes[spec.Name]["node-1"] == d.Endpoints[0] || !d.Started(spec.Name) {
		t.Fatalf("endpoints %v, node endpoints %v", d.Endpoints, d.NodeEndpoints)
	}
	ctrlDir := filepath.Join(dir, "drivers", spec.Name, ControllerRole)
	pid, node := pidOf(t, ctrlDir)
	if node != ControllerRole {
		t.Errorf("the controller process got {node} %q", node)
	}
	if _, n := pidOf(t, filepath.Join(dir, "drivers", spec.Name, "node-2")); n != "node-2" {
		t.Errorf("node-2's process got {node} %q", n)
	}

	if err := d.Restart(spec.Name, ControllerRole); err != nil {
		t.Fatal(err)
	}
	again, _ := pidOf(t, ctrlDir)
	if again == pid || alive(pid) {
		t.Errorf("restart: old pid %d (alive %v), new %d", pid, alive(pid), again)
	}
	select {
	case err := <-d.Failed():
		t.Fatalf("a restart reported as a failure: %v", err)
	default:
	}

	// A process that dies on its own is reported.
	n1, _ := pidOf(t, filepath.Join(dir, "drivers", spec.Name, "node-1"))
	_ = syscall.Kill(n1, syscall.SIGKILL)
	select {
	case err := <-d.Failed():
		if !strings.Contains(err.Error(), "node-1") {
			t.Errorf("failure %v does not name the process", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a killed driver process was not reported")
	}

	d.Stop()
	if alive(again) {
		t.Errorf("pid %d still runs after Stop", again)
	}
}

func TestStartSaysWhyADriverDidNotServe(t *testing.T) {
	spec := Spec{Name: "x.example.com", Command: []string{"/bin/sh", "-c", "echo cannot open {dir}/config >&2; exit 1", "{endpoint}"}}
	_, err := Start(Config{DataDir: t.TempDir(), Nodes: []string{"node-1"}, Specs: []Spec{spec}})
	if err == nil || !strings.Contains(err.Error(), "exited before serving") || !strings.Contains(err.Error(), "cannot open") {
		t.Fatalf("error %v: want the driver's own output", err)
	}
}
