package main

import (
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestBenchReferenceBinderFlags(t *testing.T) {
	cmd := newBenchReferenceCommand()
	if !cmd.Hidden || cmd.Name() != "reference-binder" {
		t.Errorf("command %q hidden=%v, want a hidden reference-binder", cmd.Name(), cmd.Hidden)
	}
	for flag, want := range map[string]string{"kube-api-qps": "20", "kube-api-burst": "30", "kubeconfig": ""} {
		if got := cmd.Flags().Lookup(flag).DefValue; got != want {
			t.Errorf("--%s defaults to %q, want %q", flag, got, want)
		}
	}
	cmd.SetArgs(nil)
	cmd.SetOut(new(strings.Builder))
	cmd.SetErr(new(strings.Builder))
	if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "kubeconfig") {
		t.Errorf("without --kubeconfig: %v, want an error naming it", err)
	}
}

// The reference binder runs until SIGTERM and then exits 0; at the default
// verbosity only errors reach stderr. Its API server here answers every
// request 503; the first request says the binder is running.
func TestBenchReferenceBinderStopsCleanlyOnSIGTERM(t *testing.T) {
	requested := make(chan struct{})
	var once sync.Once
	api := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		once.Do(func() { close(requested) })
		http.Error(w, "not today", http.StatusServiceUnavailable)
	}))
	api.Config.ErrorLog = log.New(io.Discard, "", 0) // the child's dropped connections
	api.StartTLS()
	defer api.Close()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "`+api.URL+`", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
current-context: x
`), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := volplane(t, "bench", "reference-binder", "--kubeconfig", kubeconfig)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-requested:
	case err := <-done:
		t.Fatalf("reference-binder exited before its first request: %v\n%s", err, &stderr)
	case <-time.After(30 * time.Second):
		t.Fatal("reference-binder sent no request within 30s")
	}
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("reference-binder did not exit cleanly on SIGTERM: %v\n%s", err, &stderr)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("reference-binder still running 30s after SIGTERM\n%s", &stderr)
	}
	t.Logf("stderr:\n%s", &stderr)
	for line := range strings.Lines(stderr.String()) {
		if !strings.HasPrefix(line, "E") {
			t.Errorf("non-error line on stderr at the default verbosity: %s", line)
		}
	}
}
