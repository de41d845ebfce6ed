package architecture

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"
)

// The upstream binaries tests need (csi-sanity, the kubelet, kube-proxy,
// containerd, runc, CNI plugins) are built from modules of their own under
// tools/, whose dependency graphs may differ from volplane's. volplane's
// module never requires or replaces one of them, and none of its packages
// imports one, so what volplane ships is built from its own go.mod alone.
func TestToolsModulesAreNeverImported(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..", "..")
	data, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	mf, err := modfile.Parse("go.mod", data, nil)
	if err != nil {
		t.Fatal(err)
	}
	tools := module + "/tools"
	under := func(path string) bool { return path == tools || strings.HasPrefix(path, tools+"/") }
	for _, r := range mf.Require {
		if under(r.Mod.Path) {
			t.Errorf("go.mod requires %s", r.Mod.Path)
		}
	}
	for _, r := range mf.Replace {
		if under(r.Old.Path) || under(r.New.Path) || strings.HasPrefix(filepath.ToSlash(r.New.Path), "./tools") {
			t.Errorf("go.mod replaces %s => %s", r.Old.Path, r.New.Path)
		}
	}
	for _, p := range packages(t) {
		if under(p.ImportPath) {
			t.Errorf("%s is a package of volplane's module: tools/ must be a module of its own", p.ImportPath)
		}
		for _, imps := range [][]string{p.Imports, p.TestImports, p.XTestImports} {
			for _, imp := range imps {
				if under(imp) {
					t.Errorf("%s imports %s", rel(p.ImportPath), imp)
				}
			}
		}
	}
}
