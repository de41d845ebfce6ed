package stacktest

import (
	"os"
	"path/filepath"
	"regexp"
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

// generated are the names the API server, the provisioner, the attacher
// and the bundled drivers make up, which differ from run to run.
var generated = []struct {
	re   *regexp.Regexp
	with string
}{
	{regexp.MustCompile(`pvc-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`), "pvc-UID"},
	{regexp.MustCompile(`csi-[0-9a-f]{64}`), "csi-SHA"},
	{regexp.MustCompile(`vol-[0-9a-f]{32}`), "vol-ID"},
	{regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`), "UID"},
}

// StableNames replaces generated names in s (volume names pvc-UID,
// VolumeAttachment names csi-SHA, bundled driver volume IDs vol-ID, UIDs),
// for comparing output with a golden file.
func StableNames(s string) string {
	for _, g := range generated {
		s = g.re.ReplaceAllString(s, g.with)
	}
	return s
}
