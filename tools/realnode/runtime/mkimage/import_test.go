package main

import (
	"bufio"
	"fmt"
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
	if _, err := os.Stat(filepath.Join(bin, "runc")); err != nil {
		t.Skipf("no runc in %s: the images are not run", bin)
	}
	runLoopLifecycle(t, bin, sock, work)
}

// runLoopLifecycle runs, in containers of the volplane image (privileged
// and root, as deploy/'s driver container), the losetup calls the driver
// makes for a block volume: attach, find by file, grow, detach. They are
// util-linux's long options, which busybox's losetup refuses.
func runLoopLifecycle(t *testing.T, bin, sock, work string) {
	file := filepath.Join(work, "vol.img")
	if err := os.WriteFile(file, make([]byte, 8<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	group := fmt.Sprintf("mkimage-test-%d", os.Getpid())
	t.Cleanup(func() {
		// The host's losetup detaches what a failed step left attached.
		if out, err := exec.Command("losetup", "--associated", file).Output(); err == nil {
			for line := range strings.Lines(string(out)) {
				if dev, _, ok := strings.Cut(line, ":"); ok {
					_ = exec.Command("losetup", "--detach", dev).Run()
				}
			}
		}
		// runc removes each container's cgroup, not the parent named here.
		dirs, _ := filepath.Glob("/sys/fs/cgroup/*/" + group)
		for _, d := range dirs {
			if err := os.Remove(d); err != nil {
				t.Errorf("cgroup left: %v", err)
			}
		}
	})
	n := 0
	losetup := func(args ...string) string {
		t.Helper()
		n++
		id := fmt.Sprintf("losetup-%d", n)
		ctr := []string{"--address", sock, "-n", "k8s.io", "run", "--rm", "--runc-binary", filepath.Join(bin, "runc"),
			"--privileged", "--user", "0", "--cgroup", "/" + group + "/" + id,
			"--mount", "type=bind,src=" + file + ",dst=/vol.img,options=rbind:rw",
			"localhost/volplane/volplane:t1", id, "/usr/sbin/losetup"}
		var stderr strings.Builder
		cmd := exec.Command(filepath.Join(bin, "ctr"), append(ctr, args...)...)
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("losetup %q in the volplane image: %v: %s", args, err, stderr.String())
		}
		return strings.TrimSpace(string(out))
	}
	dev := losetup("--find", "--show", "/vol.img")
	t.Logf("losetup --find --show in the volplane image: %s", dev)
	if !strings.HasPrefix(dev, "/dev/loop") {
		t.Fatalf("losetup --find --show: %q", dev)
	}
	if got := losetup("--associated", "/vol.img"); !strings.HasPrefix(got, dev+":") {
		t.Errorf("losetup --associated: %q, want a line of %s", got, dev)
	}
	if err := os.Truncate(file, 16<<20); err != nil {
		t.Fatal(err)
	}
	losetup("--set-capacity", dev)
	if size, err := os.ReadFile("/sys/block/" + filepath.Base(dev) + "/size"); err != nil || strings.TrimSpace(string(size)) != "32768" {
		t.Errorf("%s after --set-capacity: %s sectors, %v; want 32768 (16 MiB)", dev, size, err)
	}
	losetup("--detach", dev)
	if out, _ := exec.Command("losetup", "--associated", file).Output(); len(out) > 0 {
		t.Errorf("still attached after --detach: %s", out)
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
	// containerd finds its runc shim on its PATH.
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(containerd)+":"+os.Getenv("PATH"))
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
