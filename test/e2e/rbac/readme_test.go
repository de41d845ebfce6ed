package rbac

import (
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/volplane/volplane/internal/cluster"
)

// The README's line for kube-controller-manager turns off exactly the
// loops volplane replaces, by the names kube-controller-manager knows:
// those the embedded control plane turns off (it refuses unknown names).
func TestReadmeTurnsOffExactlyTheReplacedControllers(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	readme, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`(?m)^--controllers=\*,(\S+)$`).FindSubmatch(readme)
	if line == nil {
		t.Fatal("README.md has no line --controllers=*,-...")
	}
	var off []string
	for _, name := range strings.Split(string(line[1]), ",") {
		off = append(off, strings.TrimPrefix(name, "-"))
	}
	want := slices.Clone(cluster.ReplacedControllers)
	slices.Sort(off)
	slices.Sort(want)
	if !slices.Equal(off, want) {
		t.Errorf("README turns off %v, want %v", off, want)
	}
}
