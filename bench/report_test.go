package bench

import (
	"bytes"
	"encoding/json"
	"image/png"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

// TestPercentiles: nearest rank on a sorted copy, the input left alone.
func TestPercentiles(t *testing.T) {
	// 1..100 ms, shuffled: the p-th percentile is p ms.
	d := make([]time.Duration, 100)
	for i := range d {
		d[i] = ms(i + 1)
	}
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(d), func(i, j int) { d[i], d[j] = d[j], d[i] })
	before := slices.Clone(d)

	p50, p90, p99 := Percentiles(d)
	if p50 != ms(50) || p90 != ms(90) || p99 != ms(99) {
		t.Errorf("1..100 ms: got p50 %v p90 %v p99 %v, want 50ms 90ms 99ms", p50, p90, p99)
	}
	if !slices.Equal(d, before) {
		t.Error("Percentiles reordered its input")
	}

	// Ten values: rank ceil(0.5×10) = 5, ceil(0.9×10) = 9, ceil(0.99×10) = 10.
	ten := []time.Duration{ms(10), ms(1), ms(9), ms(2), ms(8), ms(3), ms(7), ms(4), ms(6), ms(5)}
	if p50, p90, p99 := Percentiles(ten); p50 != ms(5) || p90 != ms(9) || p99 != ms(10) {
		t.Errorf("1..10 ms: got p50 %v p90 %v p99 %v, want 5ms 9ms 10ms", p50, p90, p99)
	}

	// One value is every percentile.
	if p50, p90, p99 := Percentiles([]time.Duration{ms(7)}); p50 != ms(7) || p90 != ms(7) || p99 != ms(7) {
		t.Errorf("one value: got %v %v %v, want 7ms each", p50, p90, p99)
	}

	// Nothing measured: zeros.
	if p50, p90, p99 := Percentiles(nil); p50 != 0 || p90 != 0 || p99 != 0 {
		t.Errorf("empty: got %v %v %v, want zeros", p50, p90, p99)
	}
}

// TestCurveOfSmall: every distinct time is a point carrying the count reached
// at it, whatever the input's order.
func TestCurveOfSmall(t *testing.T) {
	bound := []time.Duration{ms(300), ms(100), ms(200), ms(100)}
	got := CurveOf(bound, 100)
	want := []Point{{0.1, 2}, {0.2, 3}, {0.3, 4}}
	if !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if CurveOf(nil, 10) != nil {
		t.Error("an empty input should give no curve")
	}
	if got := CurveOf(bound, 0); len(got) != 3 {
		t.Errorf("max 0 keeps every point, got %v", got)
	}
	if got := CurveOf(bound, 1); !slices.Equal(got, []Point{{0.3, 4}}) {
		t.Errorf("max 1 keeps the last point, got %v", got)
	}
}

// TestCurveOfDownSamples: a long curve is cut to at most max points that
// keep its exact first and last points and never go back in time or count.
func TestCurveOfDownSamples(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	bound := make([]time.Duration, 10000)
	for i := range bound {
		bound[i] = ms(10) + time.Duration(r.Int64N(int64(30*time.Second-ms(10))))
	}
	bound[17] = ms(5)              // the first bind
	bound[9000] = 31 * time.Second // the last bind

	full := CurveOf(bound, 0)
	for _, m := range []int{2, 3, 10, 500, 9999} {
		got := CurveOf(bound, m)
		if len(got) > m || len(got) < 2 {
			t.Fatalf("m %d: %d points", m, len(got))
		}
		if got[0] != full[0] || got[0] != (Point{0.005, 1}) {
			t.Errorf("m %d: first point %v, want %v", m, got[0], full[0])
		}
		if last := got[len(got)-1]; last != (Point{31, 10000}) {
			t.Errorf("m %d: last point %v, want {31 10000}", m, last)
		}
		for i := 1; i < len(got); i++ {
			if got[i].Seconds <= got[i-1].Seconds || got[i].Bound <= got[i-1].Bound {
				t.Fatalf("m %d: not increasing at %d: %v then %v", m, i, got[i-1], got[i])
			}
		}
		for _, p := range got {
			if !slices.Contains(full, p) {
				t.Fatalf("m %d: %v is not a point of the full curve", m, p)
			}
		}
	}
}

func side(name string, bindsPerSec, writesPerBind float64) Side {
	return Side{
		Name:                     name,
		Processes:                []string{name + " controller"},
		Bound:                    1000,
		Complete:                 true,
		Seconds:                  1000 / bindsPerSec,
		BindsPerSec:              bindsPerSec,
		P50:                      ms(40),
		P90:                      ms(90),
		P99:                      ms(120),
		P50Ms:                    40,
		P90Ms:                    90,
		P99Ms:                    120,
		Writes:                   int64(1000 * writesPerBind),
		Events:                   1000,
		WritesPerBind:            writesPerBind,
		CPUSeconds:               0.5,
		CPUMsPerBind:             0.5,
		PeakRSSBytes:             64 << 20,
		ControlPlaneCPUMsPerBind: 3,
		MachineBusy:              0.97,
		Curve:                    []Point{{0.1, 10}, {0.5, 400}, {1000 / bindsPerSec, 1000}},
	}
}

// twoSided is a static run at QPS 20, burst 30, where volplane binds at 800/s
// with 2 writes a bind, the reference at 200/s with 4, under a 4000 writes/s
// ceiling: 2000 and 1000 binds/s possible, 40% and 20% of them reached.
func twoSided() Report {
	vol := side(Volplane, 800, 2)
	ref := side(Reference, 200, 4)
	ref.P50, ref.P50Ms = ms(160), 160
	ref.CPUMsPerBind = 2
	ref.ControlPlaneCPUMsPerBind = 6
	ref.MachineBusy = 0.5
	ref.PeakRSSBytes = 128 << 20
	ref.Events = 2000
	return Report{
		Scenario: Static,
		Pairs:    1000,
		QPS:      20,
		Burst:    30,
		Workers:  4,
		Started:  time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC),
		Sides:    []Side{vol, ref},
		Ceiling:  &Ceiling{Writes: 40000, Seconds: 10, WritesPerSec: 4000},
	}
}

func text(t *testing.T, r Report) string {
	t.Helper()
	var b bytes.Buffer
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// line returns the first line of s that starts with prefix.
func line(t *testing.T, s, prefix string) string {
	t.Helper()
	for l := range strings.Lines(s) {
		if strings.HasPrefix(strings.TrimSpace(l), prefix) {
			return l
		}
	}
	t.Fatalf("no line starting with %q in\n%s", prefix, s)
	return ""
}

func wantIn(t *testing.T, s string, subs ...string) {
	t.Helper()
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			t.Errorf("%q missing from\n%s", sub, s)
		}
	}
}

// TestWriteTextOneSide: the header says the run, the table has the side's
// column and no ratio, and there is no ceiling when none was measured.
func TestWriteTextOneSide(t *testing.T) {
	r := twoSided()
	r.Sides = r.Sides[:1]
	r.Ceiling = nil
	r.QPS = 0
	out := text(t, r)

	wantIn(t, out, "static", "1000", "unthrottled", "workers:       4")
	wantIn(t, line(t, out, "claims bound"), "1000 (complete)")
	wantIn(t, line(t, out, "binds/s"), "800.0")
	wantIn(t, line(t, out, "p50 time to Bound (ms)"), "40.0")
	wantIn(t, line(t, out, "API writes per bind"), "2.00")
	wantIn(t, line(t, out, "peak RSS (MiB)"), "64.0")
	for _, absent := range []string{Reference, "÷", "ratio", "ceiling"} {
		if strings.Contains(out, absent) {
			t.Errorf("one side, no ceiling: %q should not appear in\n%s", absent, out)
		}
	}
}

// TestWriteTextTwoSidesAndCeiling: a ratio column says volplane ÷ reference
// and which way is better, and the ceiling turns into binds/s possible for
// each side with the share of it each reached.
func TestWriteTextTwoSidesAndCeiling(t *testing.T) {
	out := text(t, twoSided())
	t.Logf("\n%s", out)

	wantIn(t, out, "QPS 20, burst 30")
	wantIn(t, line(t, out, Volplane), Volplane, Reference, "volplane ÷ reference")
	wantIn(t, line(t, out, "binds/s"), "800.0", "200.0", "4.00x better")
	wantIn(t, line(t, out, "API writes per bind"), "0.50x better")
	wantIn(t, line(t, out, "p50 time to Bound (ms)"), "0.25x better")
	wantIn(t, line(t, out, "p90 time to Bound (ms)"), "1.00x same")
	wantIn(t, line(t, out, "controller CPU per bind (ms)"), "0.25x better")
	wantIn(t, line(t, out, "peak RSS (MiB)"), "0.50x better")
	wantIn(t, line(t, out, "control plane CPU per bind (ms)"), "3.000", "6.000", "0.50x better")
	if busy := line(t, out, "machine CPU busy (%)"); !strings.Contains(busy, "97.0") || !strings.Contains(busy, "50.0") || strings.Contains(busy, "x ") {
		t.Errorf("machine CPU busy: want both sides' shares and no ratio (the machine's, not a side's cost): %q", busy)
	}
	wantIn(t, line(t, out, "ratio ="), "higher is better", "lower is better")

	wantIn(t, out, "API server ceiling")
	ceiling := out[strings.Index(out, "API server ceiling"):]
	wantIn(t, line(t, ceiling, Volplane), "4000.0 writes/s → binds/s possible = 4000.0 ÷ 2.00 writes per bind = 2000.0",
		"800.0 binds/s", "40.0% of possible")
	wantIn(t, line(t, ceiling, Reference), "4000.0 writes/s → binds/s possible = 4000.0 ÷ 4.00 writes per bind = 1000.0",
		"200.0 binds/s", "20.0% of possible")

	if strings.Contains(ceiling, "with the workload's") {
		t.Error("a workload's share of the ceiling is shown though no workload wrote during the run")
	}
	// The workload's own writes during the run (a protection bench's
	// deletions) are counted beside the side's in a second share.
	r := twoSided()
	r.Sides[0].WorkloadWritesPerBind = 2
	out = text(t, r)
	ceiling = out[strings.Index(out, "API server ceiling"):]
	wantIn(t, line(t, ceiling, Volplane), "= 2000.0", "40.0% of possible")
	wantIn(t, ceiling[strings.Index(ceiling, "with the workload's"):], "with the workload's 2.00 writes per bind: possible = 4000.0 ÷ 4.00 = 1000.0",
		"80.0% of possible")

	// A slower volplane is worse; an incomplete side makes the time to
	// bind all incomparable.
	r = twoSided()
	r.Sides[0].BindsPerSec = 100
	r.Sides[1].Complete = false
	out = text(t, r)
	wantIn(t, line(t, out, "binds/s"), "0.50x worse")
	wantIn(t, line(t, out, "claims bound"), "1000 (incomplete)")
	wantIn(t, line(t, out, "time to bind all (s)"), "n/a")
}

// TestWriteFiles: report.json decodes back into the same Report (but for the
// durations JSON leaves out), bound.png is a PNG with a size, and nothing
// temporary is left behind.
func TestWriteFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "out", "static")
	r := twoSided()
	if err := WriteFiles(r, dir); err != nil {
		t.Fatal(err)
	}

	js, err := os.ReadFile(filepath.Join(dir, ReportJSON))
	if err != nil {
		t.Fatal(err)
	}
	var got Report
	if err := json.Unmarshal(js, &got); err != nil {
		t.Fatal(err)
	}
	want := twoSided()
	for i := range want.Sides {
		want.Sides[i].P50, want.Sides[i].P90, want.Sides[i].P99 = 0, 0, 0
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("report.json decodes to\n%+v\nwant\n%+v", got, want)
	}

	f, err := os.Open(filepath.Join(dir, BoundPNG))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("bound.png: %v", err)
	}
	if b := img.Bounds(); b.Dx() == 0 || b.Dy() == 0 {
		t.Errorf("bound.png is %v", b)
	}

	// Writing again replaces both files; only they are in dir.
	if err := WriteFiles(r, dir); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{BoundPNG, ReportJSON}; !slices.Equal(names, want) {
		t.Errorf("dir holds %v, want %v", names, want)
	}
}

// TestWriteFilesNothingBound: a run with no curve still plots, with empty
// axes, rather than failing.
func TestWriteFilesNothingBound(t *testing.T) {
	r := Report{Scenario: Trickle, Pairs: 10, Sides: []Side{{Name: Volplane}}}
	dir := t.TempDir()
	if err := WriteFiles(r, dir); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, BoundPNG))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := png.Decode(f); err != nil {
		t.Fatal(err)
	}
}

// A trickle's 10 ms against the reference's 7 s must not print as 0.00x.
func TestATinyRatioKeepsTwoSignificantDigits(t *testing.T) {
	latency := row{value: func(s Side) (float64, bool) { return s.P50Ms, true }}
	got := ratio(latency, Side{P50Ms: 11.6}, Side{P50Ms: 6810.7})
	if got != "0.0017x better" {
		t.Errorf("ratio of 11.6 to 6810.7 ms shown as %q, want 0.0017x better", got)
	}
}

// markCPU reads this process's and the machine's clocks; since counts
// this process's CPU burned in between and a busy share within [0, 1].
func TestMarkCPUCountsThisProcess(t *testing.T) {
	before, err := markCPU()
	if err != nil {
		t.Fatal(err)
	}
	for deadline, x := time.Now().Add(200*time.Millisecond), 1.0; time.Now().Before(deadline); {
		x = x*1.000001 + 1 // spin: burn CPU for the clocks to see
	}
	after, err := markCPU()
	if err != nil {
		t.Fatal(err)
	}
	self, busy := before.since(after)
	if self <= 0 || busy <= 0 || busy > 1 {
		t.Errorf("after 200 ms of spinning: self %.2f s, machine busy %.2f; want self > 0 and 0 < busy <= 1", self, busy)
	}
}

// The kernel's iowait may step back between two reads; the busy share
// must still stay within [0, 1].
func TestMachineBusyStaysAShareWhenIowaitStepsBack(t *testing.T) {
	before := cpuMark{self: 1, machineBusy: 100, idle: 50}
	for _, c := range []struct {
		now  cpuMark
		want float64
	}{
		{cpuMark{self: 2, machineBusy: 110, idle: 60}, 0.5},
		{cpuMark{self: 2, machineBusy: 110, idle: 49.9}, 1},
		{cpuMark{self: 2, machineBusy: 100, idle: 50}, 0},
	} {
		if self, busy := before.since(c.now); self != 1 || busy != c.want {
			t.Errorf("since(%+v) = %v, %v; want 1, %v", c.now, self, busy, c.want)
		}
	}
}
