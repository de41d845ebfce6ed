package architecture

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// group is a named set of the module's packages (paths relative to the
// module: "internal/binding").
type group struct {
	name string
	has  func(path string) bool
}

// target is a named set of imports a package of a group must not have;
// from is the importing package, imp the full import path.
type target struct {
	name string
	has  func(from, imp string) bool
}

// rule is one arrow that must never be drawn.
type rule struct {
	name  string
	who   group
	never target
	why   string
}

// importRules are the "never" arrows on each package's direct, non-test
// imports. Read a row as: <who> never imports <never>, because <why>.
var importRules = []rule{
	{"floors", everyPackage, aHigherFloor,
		"an arrow goes down or sideways, never up: see the floors in docs/architecture.md"},
	{"pure reads no API", decisions, clientGo,
		"a decision takes facts as values; its loop reads them through client-go and applies the plan"},
	{"pure dials nothing", decisions, grpcButCodesAndStatus,
		"a decision holds no connection; codes and status are plain values a rule may read"},
	{"pure touches no host", decisions, theHost,
		"a decision neither reads nor writes the machine it runs on; the loop or agent does"},
	{"pure reads no clock", decisions, clockAndChance,
		"now and chance are inputs: the caller reads its clock.PassiveClock and passes a time.Time"},
	{"pure waits for nothing", decisions, waiting,
		"a decision does no I/O, so it has nothing to cancel"},
	{"csierror is a leaf", packagesNamed("internal/csierror"), anythingButStdAndGRPCValues,
		"every pure core may use it, so it imports only grpc/codes and grpc/status"},
	{"csi speaks gRPC only", packagesNamed("internal/csi"), clientGo,
		"the CSI client talks to drivers; Secrets are read by internal/controller/secrets"},
	{"no loop imports a loop", loops, aLoop,
		"loops share through the loop machinery (loop, resizing, secrets, informerindex), never each other"},
	{"only the manager builds loops", allBut("the manager, commands, harness and tests", manager, command, harness, test), aLoop,
		"a loop is built in one place (the manager's table), so wiring has one home"},
	{"only the top starts a control plane", allBut("the control plane, commands, harness and tests", controlPlane, command, harness, test), theControlPlane,
		"the embedded control plane is what `up`, bench and whole-stack tests start; nothing below them knows it"},
	{"the driver is any driver", packagesNamed("internal/hostpath"), volplaneButLeaves,
		"the bundled driver is a CSI driver like any other: it knows nothing of the control plane"},
	{"only the bench runs upstream sidecars", allButPackages("bench and bench/cmd's reference binaries", "bench", "bench/cmd/volplane-reference-attacher", "bench/cmd/volplane-reference-resizer", "bench/cmd/volplane-reference-provisioner"), upstreamSidecars,
		"the upstream controllers are the bench's references, never volplane's code"},
	{"commands ship no test harness", onFloors(command), harnessPackages,
		"the harness and test support serve tests; a binary never carries them"},
}

// testImportRules are the arrows a package's own tests must not draw.
var testImportRules = []rule{
	{"unit tests start no control plane", allBut("the control plane, harness, commands and tests", controlPlane, harness, command, test), theWholeStack,
		"a package's tests stay fast and local; scenarios through the real API server live in test/e2e"},
}

// The groups.
var (
	everyPackage = group{"every package", func(string) bool { return true }}
	decisions    = group{"leaves and pure cores", func(path string) bool {
		f := floorOf(path)
		return (f == leaf || f == pure) && notDecisions[path] == ""
	}}
	loops = onFloors(loop)
)

func onFloors(fs ...floor) group {
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = f.String()
	}
	return group{strings.Join(names, ", "), func(path string) bool { return slices.Contains(fs, floorOf(path)) }}
}

func packagesNamed(paths ...string) group {
	return group{strings.Join(paths, ", "), func(path string) bool { return slices.Contains(paths, path) }}
}

func allBut(name string, fs ...floor) group {
	return group{"all but " + name, func(path string) bool { return !slices.Contains(fs, floorOf(path)) }}
}

// allButPackages is every package but the named ones.
func allButPackages(name string, paths ...string) group {
	return group{"all but " + name, func(path string) bool { return !slices.Contains(paths, path) }}
}

// The targets.
var (
	aHigherFloor = target{"a package on a higher floor", func(from, imp string) bool {
		return ours(imp) && floorOf(rel(imp)) > floorOf(from)
	}}
	aLoop    = target{"a loop", func(_, imp string) bool { return ours(imp) && floorOf(rel(imp)) == loop }}
	clientGo = external("k8s.io/client-go", under("k8s.io/client-go"))

	grpcButCodesAndStatus = external("google.golang.org/grpc but grpc/codes and grpc/status", func(imp string) bool {
		return under("google.golang.org/grpc")(imp) && !grpcValues(imp)
	})
	theHost = external("os, syscall, golang.org/x/sys, k8s.io/mount-utils, net (net/url and net/netip aside), io/ioutil", func(imp string) bool {
		return under("os", "syscall", "golang.org/x/sys", "k8s.io/mount-utils", "io/ioutil", "plugin")(imp) ||
			(under("net")(imp) && imp != "net/url" && imp != "net/netip")
	})
	clockAndChance = external("k8s.io/utils/clock, math/rand, crypto/rand", under("k8s.io/utils/clock", "math/rand", "crypto/rand"))
	waiting        = external("context", under("context"))

	anythingButStdAndGRPCValues = external("anything but the standard library, grpc/codes and grpc/status", func(imp string) bool {
		return !standard(imp) && !grpcValues(imp)
	})
	theControlPlane   = external("internal/cluster or k8s.io/kubernetes", func(imp string) bool { return rel(imp) == "internal/cluster" || under("k8s.io/kubernetes")(imp) })
	volplaneButLeaves = target{"a volplane package but a leaf", func(_, imp string) bool { return ours(imp) && floorOf(rel(imp)) != leaf }}
	upstreamSidecars  = external("the upstream sidecars' controllers", func(imp string) bool {
		return under("github.com/kubernetes-csi/external-attacher", "github.com/kubernetes-csi/external-resizer",
			"github.com/kubernetes-csi/external-provisioner", "sigs.k8s.io/sig-storage-lib-external-provisioner")(imp) ||
			(under("github.com/kubernetes-csi/external-snapshotter/v8")(imp) && !under("github.com/kubernetes-csi/external-snapshotter/client/v8")(imp))
	})
	harnessPackages = target{"the harness or test support", func(_, imp string) bool { return ours(imp) && floorOf(rel(imp)) == harness }}
	theWholeStack   = external("internal/cluster, the whole-stack harness or k8s.io/kubernetes", func(imp string) bool {
		return slices.Contains([]string{"internal/cluster", "internal/stacktest", "internal/cluster/clustertest", "test/e2e/support"}, rel(imp)) ||
			under("k8s.io/kubernetes")(imp)
	})
)

func external(name string, has func(imp string) bool) target {
	return target{name, func(_, imp string) bool { return has(imp) }}
}

// under is true of the import paths at or below any of the roots.
func under(roots ...string) func(string) bool {
	return func(imp string) bool {
		for _, r := range roots {
			if imp == r || strings.HasPrefix(imp, r+"/") {
				return true
			}
		}
		return false
	}
}

func grpcValues(imp string) bool {
	return imp == "google.golang.org/grpc/codes" || imp == "google.golang.org/grpc/status"
}

// standard is true of the standard library: no dot in the first element.
func standard(imp string) bool {
	first, _, _ := strings.Cut(imp, "/")
	return !strings.Contains(first, ".")
}

// finding is one broken rule: what the package did, and the rule.
type finding struct {
	rule string
	pkg  string // relative to the module
	what string // the import, or what purity_test saw
	why  string
	at   string // file:line where known
}

func (f finding) String() string {
	what := f.what
	if f.at != "" {
		what += " (" + f.at + ")"
	}
	return fmt.Sprintf("%s: %s breaks %q: %s", f.pkg, what, f.rule, f.why)
}

func importFindings(pkgs []pkg, rules []rule, imports func(pkg) []string, verb string) []finding {
	var out []finding
	for _, p := range pkgs {
		from := rel(p.ImportPath)
		for _, r := range rules {
			if !r.who.has(from) {
				continue
			}
			for _, imp := range imports(p) {
				if imp == p.ImportPath || !r.never.has(from, imp) {
					continue
				}
				why := fmt.Sprintf("%s never import %s: %s", r.who.name, r.never.name, r.why)
				if ours(imp) {
					why += fmt.Sprintf(" (%s is a %s, %s a %s)", from, floorOf(from), rel(imp), floorOf(rel(imp)))
				}
				out = append(out, finding{rule: r.name, pkg: from, what: verb + " " + rel(imp), why: why})
			}
		}
	}
	return out
}

func TestImportRules(t *testing.T) {
	pkgs := packages(t)
	found := importFindings(pkgs, importRules, func(p pkg) []string { return p.Imports }, "imports")
	found = append(found, importFindings(pkgs, testImportRules, func(p pkg) []string {
		return append(slices.Clone(p.TestImports), p.XTestImports...)
	}, "tests import")...)
	report(t, found)
}
