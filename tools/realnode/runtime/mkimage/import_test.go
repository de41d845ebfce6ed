package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// `mkimage images -address` writes every image and imports it into a real
// containerd (REALNODE_BIN's containerd and ctr, as build.sh makes them),
// which then lists them, complete, in the kubelet's namespace k8s.io. The
// volplane and pause binaries are stand-ins (this test's own): what is
// checked is the archive and the import, not volplane.
func TestImportIntoContainerd(t *testing.T) {
	bin := os.Getenv("REALNODE_BIN")
	if bin == "" {
		bin = "/tmp/realnode-bin"
	}
	for _, b := range []string{"containerd", "ctr"} {
		if _, err := os.Stat(filepath.Join(bin, b)); err != nil {
			t.Skipf("no %s in REALNODE_BIN=%s (tools/realnode/build.sh containerd ctr)", b, bin)
		}
	}
	if os.Getuid() != 0 {
		t.Skip("containerd needs root")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	stand := filepath.Join(work, "bin")
	if err := os.Mkdir(stand, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, target := range map[string]string{
		"volplane-image": self, "pause": self, "csi-node-driver-registrar": self, "ctr": filepath.Join(bin, "ctr"),
	} {
		if err := os.Symlink(target, filepath.Join(stand, name)); err != nil {
			t.Fatal(err)
		}
	}
	sock := startContainerd(t, filepath.Join(bin, "containerd"), work)
	err = images([]string{"-repo", "../../../..", "-bin", stand, "-out", filepath.Join(work, "images"), "-tag", "t1", "-address", sock})
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	check := exec.Command(filepath.Join(bin, "ctr"), "--address", sock, "-n", "k8s.io", "images", "check")
	check.Stderr = &stderr
	out, err := check.Output()
	if err != nil {
		t.Fatalf("ctr images check: %v: %s", err, stderr.String())
	}
	var got []string
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) > 2 && f[0] != "REF" {
			if !strings.HasPrefix(f[3], "complete") {
				t.Errorf("image %s: %s", f[0], line)
			}
			got = append(got, f[0])
		}
	}
	slices.Sort(got)
	want := []string{
		"localhost/volplane/busybox:t1", "localhost/volplane/csi-node-driver-registrar:v2.17.0",
		"localhost/volplane/pause:t1", "localhost/volplane/volplane:t1",
	}
	if !slices.Equal(got, want) {
		t.Errorf("containerd has %q, want %q", got, want)
	}
}

// startContainerd runs containerd with everything under work (no CRI: only
// the image store), stopped and its mounts checked gone at cleanup.
func startContainerd(t *testing.T, containerd, work string) string {
	t.Helper()
	sock := filepath.Join(work, "containerd.sock")
	conf := filepath.Join(work, "containerd.toml")
	err := os.WriteFile(conf, []byte(`version = 3
root = "`+work+`/root"
state = "`+work+`/state"
disabled_plugins = ["io.containerd.grpc.v1.cri", "io.containerd.cri.v1.runtime", "io.containerd.cri.v1.images", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.erofs", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]
[grpc]
  address = "`+sock+`"
[plugins.'io.containerd.internal.v1.opt']
  path = "`+work+`/opt"
`), 0o644)
	if err != nil {
		t.Fatal(err)
	}
	logf, err := os.Create(filepath.Join(work, "containerd.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(containerd, "--config", conf)
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
		logf.Close()
		if m := mountsUnder(t, work); len(m) > 0 {
			t.Errorf("containerd left mounts: %q", m)
		}
	})
	ctr := exec.Command(filepath.Join(filepath.Dir(containerd), "ctr"), "--address", sock, "version")
	for deadline := time.Now().Add(30 * time.Second); ; {
		if ctr.Run() == nil {
			return sock
		}
		select {
		case err := <-exited:
			b, _ := os.ReadFile(logf.Name())
			t.Fatalf("containerd exited: %v\n%s", err, b)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("containerd not answering after 30s")
		}
		ctr = exec.Command(ctr.Path, ctr.Args[1:]...)
	}
}

func mountsUnder(t *testing.T, dir string) []string {
	t.Helper()
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	for s := bufio.NewScanner(f); s.Scan(); {
		if fields := strings.Fields(s.Text()); len(fields) > 4 && strings.HasPrefix(fields[4], dir) {
			out = append(out, fields[4])
		}
	}
	return out
}
