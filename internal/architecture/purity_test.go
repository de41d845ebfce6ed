package architecture

import (
	"go/ast"
	"go/token"
	"go/types"
	"slices"
	"sort"
	"testing"
)

// The rules go/ast holds in the non-test files of every leaf and pure core.
const (
	ruleClock     = "a decision reads no clock"
	ruleHost      = "a decision touches no host"
	ruleGoroutine = "a decision starts no goroutine"
	ruleState     = "a decision keeps no package state"
	ruleLog       = "a decision logs nothing"
)

var purityWhy = map[string]string{
	ruleLog: "its reasons are in the plan, for the loop to log and record; a library that asks for a logger " +
		"gets klog.TODO(), klog.Background() or a klog.Logger the caller passes",
	ruleClock: "now is an input: the loop reads its clock.PassiveClock and passes a time.Time; " +
		"timers and sleeps belong to the runner",
	ruleHost:      "the file system, the environment and the process are the loop's or agent's to read and change",
	ruleGoroutine: "a decision returns its plan; running things concurrently is the loop's business",
	ruleState: "a package-level var must be a table: given its value at its declaration, never written, " +
		"its address never taken, nothing of package sync; state belongs to whoever calls the decision (and init runs nothing)",
}

// clockReads are the time functions that read or wait on the wall clock.
var clockReads = []string{"Now", "Since", "Until", "Sleep", "After", "AfterFunc", "NewTimer", "NewTicker", "Tick"}

// loggerValues are what of klog a pure core may name: loggers to hand to a
// library that asks for one (csi-translation-lib does), never a log call.
var loggerValues = []string{"TODO", "Background", "Logger"}

// hostReads are the path/filepath functions that read the file system
// (the others only compute on strings).
var hostReads = []string{"Abs", "EvalSymlinks", "Glob", "Walk", "WalkDir"}

func TestPureCoresDecideOnly(t *testing.T) {
	srcs := sources(t)
	var found []finding
	for _, path := range sortedKeys(srcs) {
		if !decisions.has(path) {
			continue
		}
		found = append(found, purityFindings(srcs[path])...)
	}
	report(t, found)
}

func purityFindings(s *source) []finding {
	var out []finding
	add := func(rule string, pos token.Pos, what string) {
		out = append(out, finding{rule: rule, pkg: s.path, what: what, why: purityWhy[rule], at: s.at(pos)})
	}
	for _, f := range s.files {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				switch pkg := s.packageOf(n); {
				case pkg == "time" && slices.Contains(clockReads, n.Sel.Name):
					add(ruleClock, n.Pos(), "uses time."+n.Sel.Name)
				case under("os", "syscall")(pkg):
					add(ruleHost, n.Pos(), "uses "+pkg+"."+n.Sel.Name)
				case pkg == "path/filepath" && slices.Contains(hostReads, n.Sel.Name):
					add(ruleHost, n.Pos(), "uses filepath."+n.Sel.Name)
				case under("k8s.io/klog")(pkg) && !slices.Contains(loggerValues, n.Sel.Name):
					add(ruleLog, n.Pos(), "uses klog."+n.Sel.Name)
				}
			case *ast.GoStmt:
				add(ruleGoroutine, n.Pos(), "go statement")
			case *ast.FuncDecl:
				if n.Recv == nil && n.Name.Name == "init" {
					add(ruleState, n.Pos(), "func init")
				}
			}
			return true
		})
	}
	for _, st := range stateVars(s) {
		add(ruleState, st.pos, "var "+st.name+" "+st.how)
	}
	return out
}

type stateVar struct {
	name string
	how  string
	pos  token.Pos
}

// stateVars are the package-level vars that are not tables: declared
// without a value, built from package sync, or written after their
// declaration (assigned, incremented, deleted from, cleared, or their
// address taken).
func stateVars(s *source) []stateVar {
	var out []stateVar
	seen := map[*types.Var]bool{}
	flag := func(v *types.Var, how string, pos token.Pos) {
		if !seen[v] {
			seen[v] = true
			out = append(out, stateVar{v.Name(), how, pos})
		}
	}
	for _, f := range s.files {
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.VAR {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for _, id := range vs.Names {
					v, ok := s.info.Defs[id].(*types.Var)
					if !ok || id.Name == "_" {
						continue
					}
					switch {
					case len(vs.Values) == 0:
						flag(v, "is declared without a value", id.Pos())
					case s.mentionsSync(vs):
						flag(v, "is built from package sync", id.Pos())
					}
				}
			}
		}
		ast.Inspect(f, func(n ast.Node) bool {
			for _, w := range s.writes(n) {
				if v := s.packageVar(w); v != nil {
					flag(v, "is written after its declaration", w.Pos())
				}
			}
			return true
		})
	}
	return out
}

// writes are the expressions a node writes to or takes the address of.
func (s *source) writes(n ast.Node) []ast.Expr {
	switch n := n.(type) {
	case *ast.AssignStmt:
		if n.Tok != token.DEFINE {
			return n.Lhs
		}
	case *ast.IncDecStmt:
		return []ast.Expr{n.X}
	case *ast.RangeStmt:
		if n.Tok == token.ASSIGN {
			return []ast.Expr{n.Key, n.Value}
		}
	case *ast.UnaryExpr:
		if n.Op == token.AND {
			return []ast.Expr{n.X}
		}
	case *ast.CallExpr:
		if id, ok := n.Fun.(*ast.Ident); ok && (id.Name == "delete" || id.Name == "clear") && len(n.Args) > 0 {
			if _, builtin := s.info.Uses[id].(*types.Builtin); builtin {
				return n.Args[:1]
			}
		}
	}
	return nil
}

func (s *source) mentionsSync(vs *ast.ValueSpec) bool {
	found := false
	ast.Inspect(vs, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok && under("sync")(s.packageOf(sel)) {
			found = true
		}
		return !found
	})
	return found
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
