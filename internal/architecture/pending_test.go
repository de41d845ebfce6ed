package architecture

import (
	"slices"
	"testing"
)

// known is a violation known today and who is expected to remove it.
type known struct {
	rule  string // the rule's name
	pkg   string // the package breaking it, relative to the module
	what  string // as the finding says it: "imports k8s.io/client-go/kubernetes", "calls time.Now"
	owner string // who is expected to remove it
}

// pending is the one table of violations known today, empty as the tree
// stands; a new rule the tree does not meet yet may list its violations
// here while they are removed. A violation not listed fails; an entry that
// no longer happens fails too, so the table only shrinks.
var pending = []known{
	// {rule, package, what, owner}
}

// report fails on every finding not pending, and on every pending entry of
// the rules this test checks that no longer happens.
func report(t *testing.T, found []finding, checked []string) {
	t.Helper()
	seen := map[known]bool{}
	for _, f := range found {
		if e, ok := pendingFor(f); ok {
			seen[e] = true
			t.Logf("pending (%s): %s", e.owner, f)
			continue
		}
		t.Error(f)
	}
	for _, e := range pending {
		if slices.Contains(checked, e.rule) && !seen[e] {
			t.Errorf("pending entry no longer happens, delete it: {%q, %q, %q, %q}", e.rule, e.pkg, e.what, e.owner)
		}
	}
}

func pendingFor(f finding) (known, bool) {
	for _, e := range pending {
		if e.rule == f.rule && e.pkg == f.pkg && e.what == f.what {
			return e, true
		}
	}
	return known{}, false
}

func names(rules []rule) []string {
	out := make([]string, len(rules))
	for i, r := range rules {
		out[i] = r.name
	}
	return out
}
