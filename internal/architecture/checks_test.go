package architecture

import (
	"go/ast"
	"go/parser"
	"go/token"
	"slices"
	"testing"
)

// The checks themselves, on a made-up package: each finding fires where
// it should and a table var is left alone.
func TestPurityChecksFire(t *testing.T) {
	const src = `package fake

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	clk "time"

	"k8s.io/klog/v2"
)

var ErrGone = errors.New("gone")           // a sentinel: a table
var names = map[int]string{1: "one"}       // read only: a table
var safe = regexp.MustCompile("^a$")       // a table
var counter int                            // no value: state
var cache = map[string]int{}               // written below: state
var mu = sync.Mutex{}                      // sync: state
var addressed = 3                          // address taken below: state
var shadowed = 1                           // only a local of its name is written
var _ = filepath.Join                      // blank: ignored

func init() {}

func translate(any) {}

func decide(name string) (string, int) {
	cache[name]++
	p := &addressed
	_ = p
	go func() {}()
	_ = clk.Now()
	_, _ = os.Getwd()
	_, _ = filepath.Abs(name)
	translate(klog.TODO())
	klog.InfoS("deciding")
	shadowed := 1 // a local that shadows the var: not a write to it
	shadowed = 2
	return names[1] + safe.String(), shadowed
}
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "fake.go", src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	s := check(module+"/internal/fake", fset, []*ast.File{f})
	var got []string
	for _, f := range purityFindings(s) {
		got = append(got, f.rule+": "+f.what)
	}
	want := []string{
		ruleState + ": func init",
		ruleGoroutine + ": go statement",
		ruleClock + ": uses time.Now",
		ruleHost + ": uses os.Getwd",
		ruleHost + ": uses filepath.Abs",
		ruleLog + ": uses klog.InfoS",
		ruleState + ": var counter is declared without a value",
		ruleState + ": var mu is built from package sync",
		ruleState + ": var cache is written after its declaration",
		ruleState + ": var addressed is written after its declaration",
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("findings:\n got %q\nwant %q", got, want)
	}
}

func TestOneHomeChecksFire(t *testing.T) {
	const src = `package fake

func sync(q interface{ AddAfter(string, int) }, inf interface{ AddIndexers(any) error }) {
	q.AddAfter("key", 1)
	_ = inf.AddIndexers(nil)
}
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "fake.go", src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, f := range oneHomeFindings(check(module+"/internal/controller/fake", fset, []*ast.File{f})) {
		got = append(got, f.rule+": "+f.what)
	}
	want := []string{"the runner owns retry: calls AddAfter", "one registry of informer indexes: calls AddIndexers"}
	if !slices.Equal(got, want) {
		t.Errorf("findings:\n got %q\nwant %q", got, want)
	}
	if got := oneHomeFindings(check(module+"/internal/controller/loop", fset, []*ast.File{f})); len(got) != 1 {
		t.Errorf("controller/loop may call AddAfter, not AddIndexers: %v", got)
	}
}

func TestRunnerCheckFires(t *testing.T) {
	const src = `package fake

import "github.com/volplane/volplane/internal/controller/loop"

func build(reg any) []*loop.Runner {
	return []*loop.Runner{{Name: "counted", Metrics: reg}, {Name: "uncounted"},
		&loop.Runner{Name: "uncounted too"}}
}
`
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "fake.go", src, parser.SkipObjectResolution)
	if err != nil {
		t.Fatal(err)
	}
	got := runnerFindings(check(module+"/internal/controller/fake", fset, []*ast.File{f}))
	if len(got) != 2 || got[0].at != "fake.go:6" || got[1].at != "fake.go:7" {
		t.Errorf("want findings at fake.go:6 and fake.go:7, got %v", got)
	}
}

// The import rules on made-up packages.
func TestImportRulesFire(t *testing.T) {
	pkgs := []pkg{
		{ImportPath: module + "/internal/binding", Imports: []string{"context", "k8s.io/client-go/tools/cache",
			"google.golang.org/grpc/codes", "google.golang.org/grpc", module + "/internal/csi", "net/url", "net"}},
		{ImportPath: module + "/internal/controller/binder", Imports: []string{module + "/internal/controller/provisioner",
			module + "/internal/controller/loop", "k8s.io/client-go/tools/cache"}},
		{ImportPath: module + "/internal/csierror", Imports: []string{"google.golang.org/grpc/status", "k8s.io/api/core/v1"}},
	}
	var got []string
	for _, f := range importFindings(pkgs, importRules, func(p pkg) []string { return p.Imports }, "imports") {
		got = append(got, f.pkg+" "+f.what+": "+f.rule)
	}
	want := []string{
		"internal/binding imports context: pure waits for nothing",
		"internal/binding imports k8s.io/client-go/tools/cache: pure reads no API",
		"internal/binding imports google.golang.org/grpc: pure dials nothing",
		"internal/binding imports internal/csi: floors",
		"internal/binding imports net: pure touches no host",
		"internal/controller/binder imports internal/controller/provisioner: no loop imports a loop",
		"internal/controller/binder imports internal/controller/provisioner: only the manager builds loops",
		"internal/csierror imports k8s.io/api/core/v1: csierror is a leaf",
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("findings:\n got %q\nwant %q", got, want)
	}
}
