package architecture

import (
	"go/ast"
	"slices"
	"testing"
)

// oneHome are the calls that only one package makes, in every package's
// non-test files.
var oneHome = []struct {
	rule  string
	calls []string // method names
	home  string   // the one package that may call them
	why   string
}{
	{"the runner owns retry", []string{"AddAfter", "AddRateLimited"}, "internal/controller/loop",
		"a sync returns loop.After(d) (or an error, or loop.Terminal) and the runner queues the key again; " +
			"no sync queues its own key"},
	{"one registry of informer indexes", []string{"AddIndexers"}, "internal/informerindex",
		"shared informers carry one set of indexes, registered once per process through informerindex"},
}

func TestOneHomeCalls(t *testing.T) {
	srcs := sources(t)
	var found []finding
	var checked []string
	for _, h := range oneHome {
		checked = append(checked, h.rule)
	}
	for _, path := range sortedKeys(srcs) {
		found = append(found, oneHomeFindings(srcs[path])...)
	}
	report(t, found, checked)
}

func oneHomeFindings(s *source) []finding {
	var out []finding
	for _, f := range s.files {
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			for _, h := range oneHome {
				if s.path != h.home && slices.Contains(h.calls, sel.Sel.Name) {
					out = append(out, finding{rule: h.rule, pkg: s.path, what: "calls " + sel.Sel.Name,
						why: "only " + h.home + " calls it: " + h.why, at: s.at(call.Pos())})
				}
			}
			return true
		})
	}
	return out
}
