package main

import (
	"strings"
	"testing"

	"github.com/volplane/volplane/bench"
)

// volplane bench --scenario dynamic --compare, at a few claims: both sides
// provision and bind every claim, the provisioner under test at the
// external-provisioner's limits (5/10) and the same volplane binder beside
// it, unmeasured; each side made one PV per claim, the workload's own claim
// creations are left out of the writes, and the report speaks of
// provisions.
func TestBenchComparesDynamicWithTheReference(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two control planes")
	}
	const pairs = 3
	provisioner := buildReference(t, bench.ReferenceProvisionerProgram)
	r, out := runBench(t, "--scenario", "dynamic", "--pairs", "3", "--compare", "--reference-provisioner", provisioner)
	if r.QPS != bench.ProvisionerQPS || r.Burst != bench.ProvisionerBurst {
		t.Errorf("limits %g/%d, want the external-provisioner's defaults", r.QPS, r.Burst)
	}
	if len(r.Sides) != 2 || r.Sides[0].Name != bench.Volplane || r.Sides[1].Name != bench.Reference {
		t.Fatalf("sides %+v, want volplane then reference", r.Sides)
	}
	for _, s := range r.Sides {
		checkSide(t, s, pairs)
		if n := s.WritesBy["persistentvolumes POST"]; n != pairs {
			t.Errorf("%s created %d PVs, want one per claim: %v", s.Name, n, s.WritesBy)
		}
		if n, ok := s.WritesBy["persistentvolumeclaims POST"]; ok {
			t.Errorf("%s: %d claim creations counted: the workload's are the only ones and are left out", s.Name, n)
		}
		if s.WritesPerBind > 15 {
			t.Errorf("%s: %.2f writes per provision, want a handful", s.Name, s.WritesPerBind)
		}
		if s.PVP50Ms <= 0 || s.PVP50Ms > s.PVP99Ms || s.PVP99Ms > s.P99Ms {
			t.Errorf("%s: claim created → PV seen p50/p99 %.1f/%.1f ms, → Bound p99 %.1f ms: want a PV before its bind",
				s.Name, s.PVP50Ms, s.PVP99Ms, s.P99Ms)
		}
		if len(s.Processes) != 2 || !strings.HasSuffix(s.Processes[1], "(not measured)") ||
			!strings.Contains(s.Processes[1], "--controllers binder,pvc-protection,pv-protection") {
			t.Errorf("%s ran %v, want the provisioner under test, then volplane's binder unmeasured", s.Name, s.Processes)
		}
	}
	if p := r.Sides[0].Processes[0]; !strings.Contains(p, "--controllers provisioner") || strings.HasSuffix(p, "(not measured)") {
		t.Errorf("volplane measured %q, want its provisioner", p)
	}
	if p := r.Sides[1].Processes[0]; !strings.HasPrefix(p, bench.ReferenceProvisionerProgram) {
		t.Errorf("the reference measured %q, want %s", p, bench.ReferenceProvisionerProgram)
	}
	if r.Ceiling == nil || r.Ceiling.WritesPerSec <= 0 {
		t.Errorf("no ceiling measured: %+v", r.Ceiling)
	}
	for _, want := range []string{"provisions/s", "API writes per provision", "claim created → Bound",
		"claim created → PV seen", "provisioner QPS 5, burst 10; binder unthrottled"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// --reference-provisioner belongs to the dynamic scenario: elsewhere it is
// refused before anything starts.
func TestBenchRefusesReferenceProvisionerOutsideDynamic(t *testing.T) {
	out, err := volplane(t, "bench", "--scenario", "static", "--reference-provisioner", "/bin/true").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--reference-provisioner is only for --scenario dynamic") {
		t.Errorf("volplane bench --scenario static --reference-provisioner: %v\n%s", err, out)
	}
}
