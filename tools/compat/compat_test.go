package compat

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// corePackages are the end-to-end suites of the loops that replace
// kube-controller-manager's and the CSI sidecars' (relative to the repo):
// binding, provisioning, protection, attach/detach, the attacher, expansion,
// modification, snapshots, and a pod using a volume on a simulated node.
var corePackages = []string{
	"./test/e2e/",
	"./test/e2e/provisioning/",
	"./test/e2e/protection/",
	"./test/e2e/attachdetach/",
	"./test/e2e/attacher/",
	"./test/e2e/expansion/",
	"./test/e2e/modification/",
	"./test/e2e/snapshot/",
	"./test/e2e/using/",
}

// TestOldestSupportedRelease builds this module's kube-apiserver,
// kube-scheduler and kube-controller-manager (the oldest Kubernetes release
// volplane supports) and runs the end-to-end core against them in place of
// the embedded ones (stacktest.BinariesEnv). Not part of the repository's
// test command: the build takes minutes.
//
//	cd tools/compat && go test -timeout 90m -v .
func TestOldestSupportedRelease(t *testing.T) {
	version := kubernetesVersion(t)
	out := os.Getenv("OUT")
	if out == "" {
		out = filepath.Join(os.TempDir(), "volplane-compat-"+version)
	}
	build(t, out, version)
	repo, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, pkg := range corePackages {
		t.Run(strings.Trim(strings.TrimPrefix(pkg, "./test/"), "/"), func(t *testing.T) {
			began := time.Now()
			cmd := exec.Command("go", "test", "-count=1", "-timeout=30m", pkg)
			cmd.Dir = repo
			cmd.Env = append(os.Environ(), "VOLPLANE_TEST_KUBE_BINARIES="+out)
			var buf bytes.Buffer
			cmd.Stdout, cmd.Stderr = &buf, &buf
			err := cmd.Run()
			t.Logf("%s against Kubernetes %s: %.0fs\n%s", pkg, version, time.Since(began).Seconds(), tail(buf.String(), 60))
			if err != nil {
				t.Errorf("%s: %v", pkg, err)
			}
		})
	}
}

// build builds the three components into out, stamped with version as the
// Kubernetes release build stamps them (clients and the components'
// emulation-version checks read it); a binary already there is kept.
func build(t *testing.T, out, version string) {
	t.Helper()
	major, minor, _ := strings.Cut(strings.TrimPrefix(version, "v"), ".")
	minor, _, _ = strings.Cut(minor, ".")
	const pkg = "k8s.io/component-base/version."
	ldflags := strings.Join([]string{
		"-X " + pkg + "gitVersion=" + version,
		"-X " + pkg + "gitMajor=" + major,
		"-X " + pkg + "gitMinor=" + minor,
		"-X " + pkg + "gitTreeState=clean",
	}, " ")
	for _, name := range []string{"kube-apiserver", "kube-scheduler", "kube-controller-manager"} {
		bin := filepath.Join(out, name)
		if _, err := os.Stat(bin); err == nil {
			continue
		}
		began := time.Now()
		cmd := exec.Command("nice", "go", "build", "-ldflags", ldflags, "-o", bin, "k8s.io/kubernetes/cmd/"+name)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("build %s: %v\n%s", name, err, b)
		}
		t.Logf("built %s %s in %.0fs", name, version, time.Since(began).Seconds())
	}
}

// kubernetesVersion is the k8s.io/kubernetes this module requires.
func kubernetesVersion(t *testing.T) string {
	mod, err := os.ReadFile("go.mod")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(mod), "\n") {
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require "))
		if len(f) >= 2 && f[0] == "k8s.io/kubernetes" && strings.HasPrefix(f[1], "v") {
			return f[1]
		}
	}
	t.Fatal("go.mod requires no k8s.io/kubernetes")
	return ""
}

func tail(s string, lines int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > lines {
		l = l[len(l)-lines:]
	}
	return strings.Join(l, "\n")
}
