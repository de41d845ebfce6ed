package main

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/volplane/volplane/internal/conformance"
	"github.com/volplane/volplane/internal/hostpath"
)

// runConformanceCLI runs `volplane conformance` in a child with args and
// returns its JSON report, its exit code and its progress output.
func runConformanceCLI(t *testing.T, args ...string) ([]conformance.Report, int, string) {
	t.Helper()
	// Short: the drivers' sockets live under it (t.TempDir's name is the
	// test's, too long for a unix socket's path).
	dir, err := os.MkdirTemp("/tmp", "vpc-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	cmd := volplane(t, append([]string{"conformance", "-o", "json", "--data-dir", dir}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	code := 0
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			t.Fatalf("volplane conformance: %v\n%s", err, stderr.String())
		}
		code = exit.ExitCode()
	}
	var reports []conformance.Report
	if err := json.Unmarshal(stdout.Bytes(), &reports); err != nil {
		t.Fatalf("the JSON report: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	return reports, code, stderr.String()
}

// statuses are a report's statuses by scenario.
func statuses(r conformance.Report) map[string]conformance.Status {
	out := map[string]conformance.Status{}
	for _, res := range r.Results {
		out[res.Name] = res.Status
	}
	return out
}

// The bundled driver, started by `conformance` as a user's driver would be
// (`volplane driver` once per node, each serving its controller too), runs
// every scenario, the kill and fault ones included, and passes; the JUnit
// file says the same.
func TestConformanceRunsAStartedDriverThroughEveryScenario(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	junit := filepath.Join(t.TempDir(), "junit.xml")
	name := hostpath.DriverName
	reports, code, progress := runConformanceCLI(t, "--nodes", "2", "--junit", junit,
		"--driver", name+"="+exe+" driver --endpoint {endpoint} --node-id {node} --data-dir {dir} --capacity 10Gi",
		"--driver-per-node", name, "--driver-block", name, "--driver-attributes", name+":tier=premium")
	if code != 0 || len(reports) != 1 {
		for _, r := range reports {
			logFailures(t, r, progress)
		}
		t.Fatalf("exit %d, %d report(s), want 0 and one", code, len(reports))
	}
	got := statuses(reports[0])
	for _, sc := range []string{"dynamic-provisioning-mount", "wait-for-first-consumer", "static-provisioning-retain", "raw-block",
		"expansion-offline", "expansion-online", "modify-volume-attributes", "clone", "snapshot-restore", "group-snapshot",
		"controller-killed", "node-plugin-killed", "faults"} {
		if got[sc] != conformance.Pass {
			t.Errorf("%s: %s, want pass", sc, got[sc])
		}
	}
	if t.Failed() {
		logFailures(t, reports[0], progress)
	}
	raw, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	var suites struct {
		Suites []struct {
			Failures int `xml:"failures,attr"`
			Tests    int `xml:"tests,attr"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(raw, &suites); err != nil || len(suites.Suites) != 1 || suites.Suites[0].Failures != 0 || suites.Suites[0].Tests != len(got) {
		t.Errorf("JUnit %+v (%v):\n%s", suites, err, raw)
	}
}

// A driver no one here wrote: the Kubernetes e2e framework's mock CSI
// driver, built from tools/drivers (its own module, never imported). The
// report is what that driver is: in memory, its publish a bare directory
// (no mount: nothing a pod writes reaches the volume), its state gone when
// its process is killed; everything else passes, faults included. Exit
// code 3: a scenario failed.
func TestConformanceOfTheKubernetesMockDriver(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "k8s-mock-csi")
	build := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", bin, "./k8smock")
	build.Dir = filepath.Join("..", "..", "tools", "drivers")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the mock driver: %v\n%s", err, out)
	}
	name := "io.kubernetes.storage.mock"
	reports, code, progress := runConformanceCLI(t, "--nodes", "1", "--timeout", "30s",
		"--driver", name+"="+bin+" -endpoint {endpoint}", "--driver-per-node", name, "--driver-attributes", name+":tier=gold")
	if code != exitFindings || len(reports) != 1 {
		t.Fatalf("exit %d, %d report(s), want %d and one:\n%s", code, len(reports), exitFindings, progress)
	}
	want := map[string]conformance.Status{
		// The mock publishes a bare directory, no mount: what a pod would
		// write there never reaches the volume.
		"dynamic-provisioning-mount": conformance.Fail,
		"static-provisioning-retain": conformance.Fail,
		"clone":                      conformance.Fail,
		"snapshot-restore":           conformance.Fail,
		// Its volumes live in its process: killed, it forgets them
		// (NodeStageVolume answers NotFound).
		"node-plugin-killed":       conformance.Fail,
		"wait-for-first-consumer":  conformance.Pass,
		"expansion-offline":        conformance.Pass,
		"expansion-online":         conformance.Pass,
		"modify-volume-attributes": conformance.Pass,
		"controller-killed":        conformance.Pass,
		"faults":                   conformance.Pass,
		"raw-block":                conformance.Skip,
		"access-modes":             conformance.Skip,
		"group-snapshot":           conformance.Skip,
		"node-failure":             conformance.Skip,
	}
	got := statuses(reports[0])
	for sc, status := range want {
		if got[sc] != status {
			t.Errorf("%s: %s, want %s", sc, got[sc], status)
		}
	}
	for _, res := range reports[0].Results {
		if res.Status == conformance.Fail && (res.Failure == nil || res.Failure.Step == "") {
			t.Errorf("%s failed without saying the step: %+v", res.Name, res)
		}
		if res.Name == "node-plugin-killed" && res.Failure != nil && !strings.Contains(res.Failure.Event, "NotFound") {
			t.Errorf("node-plugin-killed: the event %q does not carry the driver's NotFound", res.Failure.Event)
		}
	}
	if t.Failed() {
		logFailures(t, reports[0], progress)
	}
}

// logFailures logs the run's progress and the details of each failure.
func logFailures(t *testing.T, r conformance.Report, progress string) {
	t.Helper()
	t.Logf("progress:\n%s", progress)
	for _, res := range r.Results {
		if res.Failure != nil {
			t.Logf("%s failed:\n%s", res.Name, res.Failure.Body())
		}
	}
}

// `up --driver` runs a user's driver in the bundled drivers' place (here
// `volplane driver`, one process per node serving both services): its
// CSIDriver and classes with the flags' parameters and secret, a claim of
// its default class bound through it; a stop ends its processes. A driver
// that answers to another name is refused before anything is registered.
func TestUpRunsTheUsersDriverInPlaceOfTheBundledOnes(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("/tmp", "vpu-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	command := exe + " driver --endpoint {endpoint} --node-id {node} --data-dir {dir} --capacity 1Gi"

	wrong := volplane(t, "up", "--data-dir", filepath.Join(dir, "wrong"), "--driver", "x.example.com="+command, "--driver-per-node", "x.example.com")
	out, err := wrong.CombinedOutput()
	if err == nil || !strings.Contains(string(out), `answers GetPluginInfo with "`+hostpath.DriverName+`", not "x.example.com"`) {
		t.Fatalf("up with a misnamed driver: %v\n%s", err, out)
	}

	name := hostpath.DriverName
	secret := filepath.Join(dir, "creds")
	if err := os.WriteFile(secret, []byte("user=u\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "up")
	up := startUp(t, data, "--driver", name+"="+command, "--driver-per-node", name,
		"--driver-class", name+":tier=standard", "--driver-secret", name+":provisioner="+secret)
	waitKubectl(t, data, "standard/"+name+"-provisioner", "get", "storageclass", name, "-o",
		`jsonpath={.parameters.tier}/{.parameters.csi\.storage\.k8s\.io/provisioner-secret-name}`)
	waitKubectl(t, data, "true", "get", "storageclass", name, "-o", `jsonpath={.metadata.annotations.storageclass\.kubernetes\.io/is-default-class}`)
	// .data is base64: "u".
	waitKubectl(t, data, "dQ==", "get", "secret", "-n", "kube-system", name+"-provisioner", "-o", "jsonpath={.data.user}")
	if out, err := kubectl(t, data, "apply", "-f", filepath.Join("..", "..", "examples", "claim.yaml")); err != nil {
		t.Fatalf("apply the example claim: %v\n%s", err, out)
	}
	waitKubectl(t, data, "Bound", "get", "pvc", "data", "-o", "jsonpath={.status.phase}")
	up.stop(t)
	// Each process's output is in the data dir's logs.
	if log, err := os.ReadFile(filepath.Join(data, "logs", "driver-"+name+"-node-1.log")); err != nil || !bytes.Contains(log, []byte("serving CSI")) {
		t.Errorf("node-1's driver log: %v\n%s", err, log)
	}
	if left := processesUnder(t, data); len(left) > 0 {
		t.Errorf("driver processes left after up stopped: %v", left)
	}
}

// processesUnder are the pids whose command line names dir.
func processesUnder(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(cmdline, []byte(dir+"/")) {
			out = append(out, e.Name())
		}
	}
	return out
}

// A driver the user runs (--driver-endpoint, one socket serving both
// services on the one node): the lifecycle and the faults pass through its
// socket; the kill scenarios are skipped, since volplane cannot restart
// what it did not start.
func TestConformanceOfADriverTheUserRuns(t *testing.T) {
	dir, err := os.MkdirTemp("/tmp", "vpe-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	socket := filepath.Join(dir, "d.sock")
	drv := volplane(t, "driver", "--endpoint", "unix://"+socket, "--node-id", "node-1", "--data-dir", filepath.Join(dir, "d"), "--capacity", "1Gi")
	var drvOut bytes.Buffer
	drv.Stdout, drv.Stderr = &drvOut, &drvOut
	if err := drv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = drv.Process.Signal(syscall.SIGTERM)
		_ = drv.Wait()
	}()
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(socket); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the driver did not serve %s:\n%s", socket, drvOut.String())
		}
	}
	name := hostpath.DriverName
	reports, code, progress := runConformanceCLI(t, "--nodes", "1",
		"--driver-endpoint", name+"=controller=unix://"+socket+",node-1=unix://"+socket,
		"--scenario", "dynamic-provisioning-mount", "--scenario", "controller-killed", "--scenario", "node-plugin-killed", "--scenario", "faults")
	if code != 0 || len(reports) != 1 {
		for _, r := range reports {
			logFailures(t, r, progress)
		}
		t.Fatalf("exit %d, %d report(s), want 0 and one", code, len(reports))
	}
	for _, res := range reports[0].Results {
		want := conformance.Pass
		if strings.HasSuffix(res.Name, "-killed") {
			want = conformance.Skip
			if !strings.Contains(res.Reason, "not started by volplane") {
				t.Errorf("%s skipped for %q, want the reason that volplane did not start the driver", res.Name, res.Reason)
			}
		}
		if res.Status != want {
			t.Errorf("%s: %s, want %s", res.Name, res.Status, want)
		}
	}
	if t.Failed() {
		logFailures(t, reports[0], progress)
	}
}
