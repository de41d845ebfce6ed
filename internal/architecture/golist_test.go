package architecture

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

// module is the import path every rule speaks relative to.
const module = "github.com/volplane/volplane"

// pkg is what one `go list` reports of a package of the module. Imports
// are direct imports only: a rule is about what a package's own files
// name, not what its allowed libraries pull in.
type pkg struct {
	ImportPath   string
	Dir          string
	GoFiles      []string
	Imports      []string
	TestImports  []string
	XTestImports []string
}

// rel is the package's path inside the module ("internal/binding"), or
// its import path when it is not ours.
func rel(path string) string {
	if path == module {
		return "."
	}
	if r, ok := strings.CutPrefix(path, module+"/"); ok {
		return r
	}
	return path
}

var listed = sync.OnceValues(list)

// packages is every package of the module, read by one `go list` call.
func packages(t *testing.T) []pkg {
	t.Helper()
	pkgs, err := listed()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	return pkgs
}

func list() ([]pkg, error) {
	cmd := exec.Command(goBinary(), "list",
		"-json=ImportPath,Dir,GoFiles,Imports,TestImports,XTestImports", module+"/...")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%w: %s", err, stderr.String())
	}
	var pkgs []pkg
	for dec := json.NewDecoder(strings.NewReader(string(out))); ; {
		var p pkg
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			return pkgs, nil
		} else if err != nil {
			return nil, err
		}
		pkgs = append(pkgs, p)
	}
}

// goBinary is the go command of the toolchain running the test: `go test`
// puts its own GOROOT/bin first on the test's PATH (since Go 1.19), so the
// list is made by the same Go as the build.
func goBinary() string { return "go" }
