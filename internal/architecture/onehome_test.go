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
	for _, path := range sortedKeys(srcs) {
		found = append(found, oneHomeFindings(srcs[path])...)
	}
	report(t, found)
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

// The rule every loop.Runner literal outside package loop keeps.
const ruleRunnerMetrics = "every runner counts its stuck keys"

func TestEveryRunnerCountsStuckKeys(t *testing.T) {
	srcs := sources(t)
	var found []finding
	for _, path := range sortedKeys(srcs) {
		found = append(found, runnerFindings(srcs[path])...)
	}
	report(t, found)
}

// runnerFindings are the loop.Runner literals that set no Metrics: their
// stuck keys would be logged but not counted. Literals whose type is
// elided in a slice of runners count too.
func runnerFindings(s *source) []finding {
	var out []finding
	check := func(lit *ast.CompositeLit) {
		for _, e := range lit.Elts {
			if kv, ok := e.(*ast.KeyValueExpr); ok {
				if id, ok := kv.Key.(*ast.Ident); ok && id.Name == "Metrics" {
					return
				}
			}
		}
		out = append(out, finding{rule: ruleRunnerMetrics, pkg: s.path, what: "builds a loop.Runner without Metrics",
			why: "pass the process's prometheus.Registerer (the manager's wiring has it), so volplane_loop_stuck_keys counts this loop",
			at:  s.at(lit.Pos())})
	}
	for _, f := range s.files {
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.CompositeLit)
			if !ok {
				return true
			}
			if s.isRunner(lit.Type) {
				check(lit)
			}
			if arr, ok := lit.Type.(*ast.ArrayType); ok && s.isRunner(arr.Elt) {
				for _, e := range lit.Elts {
					if u, ok := e.(*ast.UnaryExpr); ok {
						e = u.X
					}
					if el, ok := e.(*ast.CompositeLit); ok && el.Type == nil {
						check(el)
					}
				}
			}
			return true
		})
	}
	return out
}

// isRunner says whether a type expression is loop.Runner or *loop.Runner.
func (s *source) isRunner(e ast.Expr) bool {
	if star, ok := e.(*ast.StarExpr); ok {
		e = star.X
	}
	sel, ok := e.(*ast.SelectorExpr)
	return ok && sel.Sel.Name == "Runner" && s.packageOf(sel) == module+"/internal/controller/loop"
}
