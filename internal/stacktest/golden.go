package stacktest

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
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
		t.Errorf("%s differs from the golden file (run with -update and read the diff):\n--- got, whole\n%s\n%s", name, got, firstDifference(got, string(want)))
	}
}

// firstDifference shows where got and want part: the first line that
// differs, with a few lines around it from each, so that a failure read
// from a truncated log still says what changed.
func firstDifference(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	i := 0
	for i < len(g) && i < len(w) && g[i] == w[i] {
		i++
	}
	window := func(lines []string) string {
		from, to := max(i-3, 0), min(i+4, len(lines))
		return strings.Join(lines[from:to], "\n")
	}
	return fmt.Sprintf("first difference at line %d (%d lines got, %d wanted)\n--- got, there\n%s\n--- want, there\n%s", i+1, len(g), len(w), window(g), window(w))
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
