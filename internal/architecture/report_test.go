package architecture

import "testing"

// report fails on every finding: the tree meets every rule, without a
// table of exceptions.
func report(t *testing.T, found []finding) {
	t.Helper()
	for _, f := range found {
		t.Error(f)
	}
}

func names(rules []rule) []string {
	out := make([]string, len(rules))
	for i, r := range rules {
		out[i] = r.name
	}
	return out
}
