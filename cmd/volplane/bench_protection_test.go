package main

import (
	"strings"
	"testing"

	"github.com/volplane/volplane/bench"
)

// volplane bench --scenario protection --compare, at a few pairs: both
// sides see every claim and PV gone, at kube-controller-manager's limits,
// with one finalizer write per object (the workload's deletions left out);
// only volplane has a measured process, and the ceiling is measured.
func TestBenchComparesProtectionWithTheReference(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two control planes")
	}
	const pairs = 3
	r, out := runBench(t, "--scenario", "protection", "--pairs", "3", "--compare")
	if r.QPS != bench.ProtectionQPS || r.Burst != bench.ProtectionBurst {
		t.Errorf("limits %g/%d, want kube-controller-manager's", r.QPS, r.Burst)
	}
	if len(r.Sides) != 2 || r.Sides[0].Name != bench.Volplane || r.Sides[1].Name != bench.Reference {
		t.Fatalf("sides %+v, want volplane then reference", r.Sides)
	}
	for _, s := range r.Sides {
		if !s.Complete || s.Bound != pairs || s.BindsPerSec <= 0 || s.P50Ms > s.P99Ms {
			t.Errorf("%s: %d of %d pairs gone (complete %v), %.1f/s, p50 %.1f ms, p99 %.1f ms",
				s.Name, s.Bound, pairs, s.Complete, s.BindsPerSec, s.P50Ms, s.P99Ms)
		}
		if s.WritesPerBind != 2 || s.WritesBy["persistentvolumeclaims DELETE"] != 0 || s.WritesBy["persistentvolumes DELETE"] != 0 {
			t.Errorf("%s: %.2f writes per pair %v, want one finalizer write per claim and per PV", s.Name, s.WritesPerBind, s.WritesBy)
		}
	}
	if v := r.Sides[0]; len(v.Processes) != 2 || v.CPUSeconds <= 0 || v.PeakRSSBytes <= 0 {
		t.Errorf("volplane ran %v, CPU %.2f s, peak RSS %d B: want its two protection loops, each measured", v.Processes, v.CPUSeconds, v.PeakRSSBytes)
	}
	if p := r.Sides[1].Processes; len(p) != 0 {
		t.Errorf("the reference ran %v, want nothing (its loops run in the control plane)", p)
	}
	if r.Ceiling == nil || r.Ceiling.WritesPerSec <= 0 {
		t.Errorf("no ceiling measured: %+v", r.Ceiling)
	}
	for _, want := range []string{"pairs gone/s", "API writes per pair", "claim deleted → pair gone"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}
