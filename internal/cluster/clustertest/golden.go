package clustertest

import (
	"os"
	"path/filepath"
	"testing"
)

// Golden compares got with the file testdata/name, or rewrites the file
// when update is set (a package's -update flag).
func Golden(t testing.TB, name, got string, update bool) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to write it)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file (run with -update and read the diff):\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}
