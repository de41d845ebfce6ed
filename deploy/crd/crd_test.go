package crd

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// deploy/crd holds the snapshot API's definitions as the client module
// ships them: byte for byte, so that an upgrade of the module in go.mod is
// also a copy of its files (cp "$(go list -m -f '{{.Dir}}' MODULE)"/config/crd/*.yaml deploy/crd/).
func TestSnapshotCRDsAreTheClientModules(t *testing.T) {
	const module = "github.com/kubernetes-csi/external-snapshotter/client/v8"
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", module).Output()
	if err != nil {
		t.Fatalf("go list -m %s: %v", module, err)
	}
	dir := filepath.Join(strings.TrimSpace(string(out)), "config", "crd")
	theirs, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(theirs) == 0 {
		t.Fatalf("no CRDs in %s: %v", dir, err)
	}
	ours, _ := filepath.Glob("*.yaml")
	if len(ours) != len(theirs) {
		t.Errorf("deploy/crd has %d files, the module %d", len(ours), len(theirs))
	}
	for _, path := range theirs {
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(filepath.Base(path))
		if err != nil {
			t.Errorf("deploy/crd lacks %s: %v", filepath.Base(path), err)
			continue
		}
		if !bytes.Equal(got, want) {
			t.Errorf("deploy/crd/%s differs from the module's", filepath.Base(path))
		}
	}
	crds, err := Snapshot()
	if err != nil {
		t.Fatal(err)
	}
	if len(crds) != 6 {
		t.Errorf("Snapshot: %d, want 6", len(crds))
	}
}
