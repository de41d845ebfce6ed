package main

import (
	"strings"
	"testing"

	"github.com/volplane/volplane/bench"
)

// volplane bench --scenario expand --compare, at a few claims: both sides
// expand every claim at the roles' own limits (expander 20/30, resizer
// 5/10), the writes counted per expansion are those of a controller-only
// expansion (the PV's capacity and the claim's status, the workload's own
// request raises left out), and the report speaks of expansions.
func TestBenchComparesExpandWithTheReference(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two control planes")
	}
	const pairs = 3
	resizer := buildReference(t, bench.ReferenceResizerProgram)
	r, out := runBench(t, "--scenario", "expand", "--pairs", "3", "--compare", "--reference-resizer", resizer)
	if r.QPS != bench.ExpanderQPS || r.Burst != bench.ExpanderBurst ||
		r.ResizerQPS != bench.ResizerQPS || r.ResizerBurst != bench.ResizerBurst {
		t.Errorf("limits %g/%d and %g/%d, want the reference processes' defaults", r.QPS, r.Burst, r.ResizerQPS, r.ResizerBurst)
	}
	if len(r.Sides) != 2 || r.Sides[0].Name != bench.Volplane || r.Sides[1].Name != bench.Reference {
		t.Fatalf("sides %+v, want volplane then reference", r.Sides)
	}
	for _, s := range r.Sides {
		checkSide(t, s, pairs)
		if s.WritesBy["persistentvolumes PATCH"]+s.WritesBy["persistentvolumes PUT"] < pairs ||
			s.WritesBy["persistentvolumeclaims/status PATCH"]+s.WritesBy["persistentvolumeclaims/status PUT"] < pairs {
			t.Errorf("%s wrote %v, want at least one PV write and one claim status write per expansion", s.Name, s.WritesBy)
		}
		if n := s.WritesBy["persistentvolumeclaims PATCH"]; n < 0 {
			t.Errorf("%s: %d claim patches: the workload's raises were taken off twice", s.Name, n)
		}
		if s.WritesPerBind > 10 {
			t.Errorf("%s: %.2f writes per expansion, want a handful", s.Name, s.WritesPerBind)
		}
	}
	if n := len(r.Sides[0].Processes); n != 2 {
		t.Errorf("volplane ran %v, want the expander and the resizer", r.Sides[0].Processes)
	}
	if p := r.Sides[1].Processes; len(p) != 1 || !strings.HasPrefix(p[0], bench.ReferenceResizerProgram) {
		t.Errorf("the reference ran %v, want %s alone (its expand controller runs in the control plane)", p, bench.ReferenceResizerProgram)
	}
	if r.Ceiling == nil || r.Ceiling.WritesPerSec <= 0 {
		t.Errorf("no ceiling measured: %+v", r.Ceiling)
	}
	for _, want := range []string{"expansions/s", "API writes per expansion", "request raised → capacity seen", "resizer QPS 5, burst 10"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// --reference-resizer belongs to the expand scenario: elsewhere it is
// refused before anything starts.
func TestBenchRefusesReferenceResizerOutsideExpand(t *testing.T) {
	out, err := volplane(t, "bench", "--scenario", "static", "--reference-resizer", "/bin/true").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--reference-resizer is only for --scenario expand") {
		t.Errorf("volplane bench --scenario static --reference-resizer: %v\n%s", err, out)
	}
}
