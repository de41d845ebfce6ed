package main

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// nothingMountedAfterStop is what a clean stop of up leaves: not one mount
// under its data dir (/proc/self/mountinfo), so that removing the data dir
// just works, while the pods stay as they were (Running: the stop is the
// machine's, not a drain).
func nothingMountedAfterStop(t *testing.T, dir string) {
	t.Helper()
	if left := mountsUnder(dir); len(left) > 0 {
		t.Fatalf("a clean stop of up left %d mounts under its data dir: %v", len(left), left)
	}
}

// mountedAgain waits until the writer pod, Running through the stop, has
// its volume published again by the restarted up, with what it wrote
// before the stop.
func (w *networkWalkthrough) mountedAgain(t *testing.T) {
	t.Helper()
	client := clientFor(t, w.dir)
	writer, err := client.CoreV1().Pods("default").Get(context.Background(), "writer", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(w.publishedPath("node-1", writer), "hello")
	var last string
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		data, err := os.ReadFile(file)
		mounted := false
		for _, m := range mountsUnder(w.dir) {
			if m == filepath.Dir(file) {
				mounted = true
			}
		}
		if err == nil && string(data) == "from node-1\n" && mounted {
			return
		}
		last = "mounted " + map[bool]string{true: "yes", false: "no"}[mounted] + ", " + string(data)
		if err != nil {
			last += err.Error()
		}
	}
	t.Fatalf("the writer pod's volume is not published again with its data after the restart: %s", last)
}

// An up killed outright (SIGKILL: no clean stop) leaves its mounts; the
// next start copes: once its loops run, the writer pod's volume is found
// mounted and used as it is (no "already mounted" failure), with its data.
// Killed again, then stopped as soon as it says it is up (before its loops
// and node agent started), up still unmounts what the killed run left.
func TestUpKilledLeavesMountsTheNextStartReuses(t *testing.T) {
	dir := t.TempDir()
	first := startUp(t, dir, "--nodes", "2")
	network := startNetworkWalkthrough(t, dir)
	killUp(t, dir, first)
	restarted := startUp(t, dir, "--nodes", "2")
	waitUpReady(t, restarted)
	network.mountedAgain(t)
	writer, err := clientFor(t, dir).CoreV1().Pods("default").Get(context.Background(), "writer", metav1.GetOptions{})
	if err != nil || writer.Status.Phase != corev1.PodRunning {
		t.Errorf("writer after the restart: %v", err)
	}
	killUp(t, dir, restarted)
	last := startUp(t, dir, "--nodes", "2")
	last.stop(t)
	nothingMountedAfterStop(t, dir)
}

// killUp kills up outright and checks it left mounts behind.
func killUp(t *testing.T, dir string, p *upProcess) {
	t.Helper()
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-p.done
	if len(mountsUnder(dir)) == 0 {
		t.Fatal("a killed up left no mount: nothing for the next start to cope with")
	}
}

// waitUpReady waits until up's loops, the node agent among them, run:
// its /readyz answers 200.
func waitUpReady(t *testing.T, p *upProcess) {
	t.Helper()
	url := strings.TrimSuffix(<-p.metrics, "/metrics") + "/readyz"
	for deadline := time.Now().Add(2 * time.Minute); httpStatus(t, url) != http.StatusOK; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s not 200 after 2 minutes", url)
		}
	}
}
