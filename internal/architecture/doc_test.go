package architecture

import "testing"

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
	report(t, found, []string{"every package says what it is"})
}
