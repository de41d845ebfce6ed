package architecture

import (
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// source is one package's non-test files, parsed, with the names its
// files use resolved by go/types against stand-in imports: enough to tell
// a package name from a local variable and a package-level var from a
// shadowing one, without compiling dependencies.
type source struct {
	path  string // relative to the module
	fset  *token.FileSet
	files []*ast.File
	info  *types.Info
	scope *types.Scope // the package scope
}

var parsed = sync.OnceValues(func() (map[string]*source, error) {
	pkgs, err := listed()
	if err != nil {
		return nil, err
	}
	out := map[string]*source{}
	for _, p := range pkgs {
		s, err := parse(p)
		if err != nil {
			return nil, err
		}
		out[s.path] = s
	}
	return out, nil
})

func sources(t *testing.T) map[string]*source {
	t.Helper()
	srcs, err := parsed()
	if err != nil {
		t.Fatalf("parse: %v", err)
	}
	return srcs
}

func parse(p pkg) (*source, error) {
	fset := token.NewFileSet()
	var files []*ast.File
	for _, name := range p.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(p.Dir, name), nil, parser.SkipObjectResolution|parser.ParseComments)
		if err != nil {
			return nil, err
		}
		files = append(files, f)
	}
	return check(p.ImportPath, fset, files), nil
}

// check resolves the names of a package's files.
func check(importPath string, fset *token.FileSet, files []*ast.File) *source {
	s := &source{path: rel(importPath), fset: fset, files: files}
	s.info = &types.Info{Uses: map[*ast.Ident]types.Object{}, Defs: map[*ast.Ident]types.Object{}}
	conf := types.Config{Importer: standIns{}, Error: func(error) {}} // stand-ins leave selectors undefined: expected
	checked, _ := conf.Check(importPath, fset, files, s.info)
	s.scope = checked.Scope()
	return s
}

// standIns imports every package as an empty one of its likely name: the
// checks need to know which package an identifier names, not what is in it.
type standIns struct{}

var _ types.Importer = standIns{}

func (standIns) Import(path string) (*types.Package, error) {
	if path == "unsafe" {
		return importer.Default().Import(path)
	}
	p := types.NewPackage(path, likelyName(path))
	p.MarkComplete()
	return p, nil
}

var majorVersion = regexp.MustCompile(`^v[0-9]+$`)

// likelyName is the name a package is usually declared with: its last
// path element, the one before when that is a module's major version
// (k8s.io/klog/v2). It guesses wrong for API versions (k8s.io/api/core/v1
// is v1), which only leaves their selectors unresolved: no check reads them.
func likelyName(path string) string {
	parts := strings.Split(path, "/")
	name := parts[len(parts)-1]
	if majorVersion.MatchString(name) && len(parts) > 1 {
		name = parts[len(parts)-2]
	}
	return strings.NewReplacer("-", "", ".", "").Replace(strings.TrimPrefix(name, "go-"))
}

// packageOf is the import path of the package a selector's left side
// names, or "" when it names none (a value, a type, a shadowing local).
func (s *source) packageOf(sel *ast.SelectorExpr) string {
	id, ok := sel.X.(*ast.Ident)
	if !ok {
		return ""
	}
	if pn, ok := s.info.Uses[id].(*types.PkgName); ok {
		return pn.Imported().Path()
	}
	return ""
}

// packageVar is the package-level var an expression is rooted at (x in
// x, x.f, x[i], *x, (x)), or nil.
func (s *source) packageVar(e ast.Expr) *types.Var {
	for {
		switch x := e.(type) {
		case *ast.ParenExpr:
			e = x.X
		case *ast.SelectorExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.StarExpr:
			e = x.X
		case *ast.Ident:
			v, ok := s.info.Uses[x].(*types.Var)
			if ok && v.Parent() == s.scope {
				return v
			}
			return nil
		default:
			return nil
		}
	}
}

func (s *source) at(pos token.Pos) string {
	p := s.fset.Position(pos)
	return filepath.Base(p.Filename) + ":" + strconv.Itoa(p.Line)
}
