package harness

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"
)

// Upstream are the binaries of BIN a node needs, by build.sh's names.
var Upstream = []string{"kubelet", "kube-proxy", "containerd", "containerd-shim-runc-v2", "ctr", "runc",
	"cni/bridge", "cni/host-local", "cni/loopback", "pause", "mkimage", "csi-node-driver-registrar", "helm"}

// Binaries are where the node's programs are: BIN (upstream, built by
// build.sh) and volplane, built from this checkout for every run.
type Binaries struct {
	Dir      string
	Volplane string
}

// Path is the path of a binary of BIN.
func (b Binaries) Path(name string) string { return filepath.Join(b.Dir, name) }

// toolsDir is tools/realnode, found from this file.
func toolsDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(file))
}

// EnsureBinaries builds with build.sh whatever BIN (default
// /tmp/realnode-bin) lacks, then volplane from the repository into work
// (the build cache makes that cheap when nothing changed). It logs the time
// of each.
func EnsureBinaries(t *testing.T, work string) Binaries {
	t.Helper()
	b := Binaries{Dir: os.Getenv("BIN")}
	if b.Dir == "" {
		b.Dir = "/tmp/realnode-bin"
	}
	var missing []string
	for _, name := range Upstream {
		if _, err := os.Stat(b.Path(name)); err != nil {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		began := time.Now()
		cmd := exec.Command(filepath.Join(toolsDir(), "build.sh"), missing...)
		cmd.Env = append(os.Environ(), "OUT="+b.Dir)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build.sh %v: %v\n%s", missing, err, out)
		} else {
			t.Logf("built %v in %s:\n%s", missing, time.Since(began).Round(time.Second), out)
		}
	}
	began := time.Now()
	b.Volplane = filepath.Join(work, "volplane")
	cmd := exec.Command("nice", "-n", "15", "go", "build", "-o", b.Volplane, "./cmd/volplane")
	cmd.Dir = filepath.Join(toolsDir(), "..", "..")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("build volplane: %v\n%s", err, out)
	}
	t.Logf("volplane built in %s", time.Since(began).Round(time.Second))
	return b
}
