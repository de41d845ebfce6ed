package architecture

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Every package says what it is and names its nouns in a package comment
// (doc.go by custom), so a reader knows where they are before reading code.
func TestEveryPackageSaysWhatItIs(t *testing.T) {
	srcs := sources(t)
	var found []finding
	for _, path := range sortedKeys(srcs) {
		s := srcs[path]
		if len(s.files) == 0 {
			continue // tests only
		}
		documented := false
		for _, f := range s.files {
			documented = documented || f.Doc != nil
		}
		if !documented {
			found = append(found, finding{rule: "every package says what it is", pkg: path, what: "has no package comment",
				why: "write a doc.go: what the package is for and its nouns"})
		}
	}
	report(t, found)
}

// The floors table of docs/architecture.md says what floors says: each
// package of floors 1 to 10 in its row, and nothing else there.
func TestDocumentNamesTheFloors(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	rows := documentedFloors(string(doc))
	if len(rows) != int(command) {
		t.Fatalf("docs/architecture.md: found %d numbered rows of the floors table, want %d (1 %s to %d %s)",
			len(rows), command, leaf, command, command)
	}
	for _, p := range packages(t) {
		path := rel(p.ImportPath)
		f := floorOf(path)
		if f < leaf || f > command {
			continue
		}
		if !slices.Contains(rows[f], documentedName(path)) {
			t.Errorf("docs/architecture.md: the floors table does not name `%s` on floor %d (%s)", documentedName(path), f, f)
		}
	}
	for f, names := range rows {
		for _, name := range names {
			path := name
			if !strings.HasPrefix(name, "cmd/") && !strings.HasPrefix(name, "test/") && name != "bench" && !strings.HasPrefix(name, "bench/") && name != "deploy" && !strings.HasPrefix(name, "deploy/") {
				path = "internal/" + name
			}
			if got := floorOf(path); got != f {
				t.Errorf("docs/architecture.md: the floors table names `%s` on floor %d (%s); floors says %s", name, f, f, got)
			}
		}
	}
}

// documentedFloors reads the rows "| N name | `pkg`, `pkg` | ... |" of the
// floors table.
func documentedFloors(doc string) map[floor][]string {
	rows := map[floor][]string{}
	row := regexp.MustCompile("(?m)^\\| ([0-9]+) [^|]+\\|([^|]+)\\|")
	name := regexp.MustCompile("`([^`]+)`")
	for _, m := range row.FindAllStringSubmatch(doc, -1) {
		n, _ := strconv.Atoi(m[1])
		for _, nm := range name.FindAllStringSubmatch(m[2], -1) {
			rows[floor(n)] = append(rows[floor(n)], nm[1])
		}
	}
	return rows
}

// documentedName is how the document names a package: its path in the
// module, internal/ left out.
func documentedName(path string) string { return strings.TrimPrefix(path, "internal/") }

// Every rule the tests hold has a row, under its name, in the document.
func TestDocumentNamesTheRules(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "architecture.md"))
	if err != nil {
		t.Fatal(err)
	}
	all := append(names(importRules), names(testImportRules)...)
	all = append(all, ruleClock, ruleHost, ruleGoroutine, ruleLog, ruleState, "every package says what it is", ruleRunnerMetrics)
	for _, h := range oneHome {
		all = append(all, h.rule)
	}
	for _, name := range all {
		if !strings.Contains(string(doc), "\n| "+name+" |") {
			t.Errorf("docs/architecture.md has no row for the rule %q", name)
		}
	}
}
