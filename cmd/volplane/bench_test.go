package main

import (
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volplane/volplane/bench"
)

// runBench runs `volplane bench args...` in a child process and returns its
// report, decoded from the report.json it wrote, and its standard output.
func runBench(t *testing.T, args ...string) (bench.Report, string) {
	t.Helper()
	dir := t.TempDir()
	var stderr strings.Builder
	cmd := volplane(t, append([]string{"bench", "-o", dir}, args...)...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("volplane bench %v: %v\n%s\n%s", args, err, out, stderr.String())
	}
	raw, err := os.ReadFile(filepath.Join(dir, bench.ReportJSON))
	if err != nil {
		t.Fatal(err)
	}
	var r bench.Report
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("report.json: %v", err)
	}
	f, err := os.Open(filepath.Join(dir, bench.BoundPNG))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := png.Decode(f); err != nil {
		t.Errorf("bound.png: %v", err)
	}
	return r, string(out)
}

// checkSide asserts what every complete side must report: all bound,
// times ordered, and costs that were actually measured.
func checkSide(t *testing.T, s bench.Side, pairs int) {
	t.Helper()
	if !s.Complete || s.Bound != pairs {
		t.Errorf("%s: bound %d of %d (complete %v)", s.Name, s.Bound, pairs, s.Complete)
	}
	if s.BindsPerSec <= 0 || s.P50Ms > s.P90Ms || s.P90Ms > s.P99Ms {
		t.Errorf("%s: binds/s %.1f, p50/p90/p99 %.1f/%.1f/%.1f ms", s.Name, s.BindsPerSec, s.P50Ms, s.P90Ms, s.P99Ms)
	}
	if s.WritesPerBind < 2 || s.CPUSeconds <= 0 || s.PeakRSSBytes <= 0 {
		t.Errorf("%s: writes/bind %.2f, CPU %.2f s, peak RSS %d B: a cost was not measured",
			s.Name, s.WritesPerBind, s.CPUSeconds, s.PeakRSSBytes)
	}
	if n := len(s.Curve); n == 0 || s.Curve[n-1].Bound != s.Bound {
		t.Errorf("%s: the curve does not end at the %d claims bound", s.Name, s.Bound)
	}
}

// volplane bench --compare measures both sides on the same static workload
// and the API server's ceiling, prints them side by side and saves them.
func TestBenchComparesStaticBindingWithTheReference(t *testing.T) {
	const pairs = 30
	r, out := runBench(t, "--pairs", "30", "--compare")
	if len(r.Sides) != 2 || r.Sides[0].Name != bench.Volplane || r.Sides[1].Name != bench.Reference {
		t.Fatalf("sides %+v, want volplane then reference", r.Sides)
	}
	for _, s := range r.Sides {
		checkSide(t, s, pairs)
	}
	// volplane's bind is four writes (PV, PV status, claim, claim status),
	// plus an Available phase for the few PVs no claim was waiting on; the
	// reference writes that fifth for every PV.
	if w, ref := r.Sides[0].WritesPerBind, r.Sides[1].WritesPerBind; w < 4 || w >= ref {
		t.Errorf("volplane wrote %.2f times per bind, the reference %.2f: want 4 or a little more, and fewer", w, ref)
	}
	if r.Ceiling == nil || r.Ceiling.WritesPerSec <= 0 {
		t.Errorf("no ceiling measured: %+v", r.Ceiling)
	}
	for _, want := range []string{"volplane ÷ reference", "binds/s possible", "reference-binder"} {
		if !strings.Contains(out, want) && !strings.Contains(strings.Join(r.Sides[1].Processes, " "), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// The other scenarios run end to end on volplane alone: PVs trickling in
// for waiting claims, dynamic provisioning on the bundled driver, and churn
// (claims created, bound and deleted while others are).
func TestBenchRunsEveryScenario(t *testing.T) {
	for _, scenario := range []string{bench.Trickle, bench.Dynamic, bench.Churn} {
		t.Run(scenario, func(t *testing.T) {
			const pairs = 10
			r, _ := runBench(t, "--scenario", scenario, "--pairs", "10", "--rate", "50", "--memory-limit", "512MiB")
			if len(r.Sides) != 1 {
				t.Fatalf("sides %+v, want volplane alone", r.Sides)
			}
			checkSide(t, r.Sides[0], pairs)
			if (r.Ceiling == nil) != (scenario == bench.Churn) {
				t.Errorf("ceiling %+v: measured for every scenario but churn", r.Ceiling)
			}
		})
	}
}

// Bad flags are refused before any control plane starts.
func TestBenchRefusesBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--scenario", "stampede"},
		{"--pairs", "0"},
		{"--scenario", "trickle", "--rate", "0"},
		{"--qps", "20", "--burst", "0"},
		{"--memory-limit", "lots"},
	} {
		out, err := volplane(t, append([]string{"bench"}, args...)...).CombinedOutput()
		if err == nil {
			t.Errorf("volplane bench %v succeeded, want an error", args)
			continue
		}
		if !strings.Contains(string(out), "error:") || strings.Contains(string(out), "starting a fresh control plane") {
			t.Errorf("volplane bench %v: want a flag error before any start, got:\n%s", args, out)
		}
	}
}
