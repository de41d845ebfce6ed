package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Percentiles returns the 50th, 90th and 99th percentiles of d by the
// nearest-rank method: the smallest value at least p% of the values are
// less than or equal to. d is left as it is; an empty d gives zeros.
func Percentiles(d []time.Duration) (p50, p90, p99 time.Duration) {
	if len(d) == 0 {
		return 0, 0, 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return nearestRank(s, 50), nearestRank(s, 90), nearestRank(s, 99)
}

// nearestRank is the p-th percentile of the sorted, non-empty s.
func nearestRank(s []time.Duration, p int) time.Duration {
	rank := (p*len(s) + 99) / 100 // ceil(p/100 × n), 1-based
	return s[max(rank, 1)-1]
}

// CurveOf turns each claim's time to Bound since the controller's start, in
// any order, into the cumulative count of Bound claims over time: one Point
// per distinct time, carrying the count reached at that time. When that is
// more than maxPoints points it keeps maxPoints of them, evenly spaced by
// count, always including the first and the last (so the final count and
// the time it was reached stay exact); maxPoints == 1 keeps only the last,
// maxPoints <= 0 keeps all.
// An empty bound gives nil.
func CurveOf(bound []time.Duration, maxPoints int) []Point {
	if len(bound) == 0 {
		return nil
	}
	s := slices.Clone(bound)
	slices.Sort(s)
	full := make([]Point, 0, len(s))
	for i, d := range s {
		if i+1 < len(s) && s[i+1] == d {
			continue // the count at d is the one after the last claim at d
		}
		full = append(full, Point{Seconds: d.Seconds(), Bound: i + 1})
	}
	n := len(full)
	switch {
	case maxPoints <= 0 || n <= maxPoints:
		return full
	case maxPoints == 1:
		return full[n-1:]
	}
	// Indices k×(n-1)/(m-1) for k = 0..m-1: strictly increasing since
	// n > m, the first 0 and the last n-1.
	m := maxPoints
	out := make([]Point, m)
	for k := range m {
		out[k] = full[k*(n-1)/(m-1)]
	}
	return out
}

// Limits says how the controllers' API clients were throttled, e.g.
// "unthrottled" or "QPS 20, burst 30".
func (r Report) Limits() string {
	switch r.Scenario {
	case Attach:
		return fmt.Sprintf("attach/detach %s; attacher %s", limits(r.QPS, r.Burst), limits(r.AttacherQPS, r.AttacherBurst))
	case Expand:
		return fmt.Sprintf("expander %s; resizer %s", limits(r.QPS, r.Burst), limits(r.ResizerQPS, r.ResizerBurst))
	case Dynamic:
		return fmt.Sprintf("provisioner %s; binder unthrottled", limits(r.QPS, r.Burst))
	}
	return limits(r.QPS, r.Burst)
}

func limits(qps float32, burst int) string {
	if qps <= 0 {
		return "unthrottled"
	}
	return fmt.Sprintf("QPS %g, burst %d", qps, burst)
}

// Title names the run in one line: "<scenario>, <pairs> pairs, <limits>".
func (r Report) Title() string {
	return fmt.Sprintf("%s, %d pairs, %s", r.Scenario, r.Pairs, r.Limits())
}

// A row of the table WriteText prints.
type row struct {
	label string
	// cell formats one side's value; value gives the number the ratio
	// column divides (ok false: no ratio for this row or this side).
	cell  func(s Side) string
	value func(s Side) (v float64, ok bool)
	// higherBetter is true for throughput, false for costs and latencies.
	higherBetter bool
}

func rows() []row {
	num := func(f func(Side) float64) func(Side) (float64, bool) {
		return func(s Side) (float64, bool) { return f(s), true }
	}
	return []row{
		{
			label: "claims bound",
			cell: func(s Side) string {
				if s.Complete {
					return fmt.Sprintf("%d (complete)", s.Bound)
				}
				return fmt.Sprintf("%d (incomplete)", s.Bound)
			},
		},
		{
			label: "time to bind all (s)",
			cell:  func(s Side) string { return fmt.Sprintf("%.2f", s.Seconds) },
			// Only comparable when both sides bound everything.
			value: func(s Side) (float64, bool) { return s.Seconds, s.Complete },
		},
		{
			label:        "binds/s",
			cell:         func(s Side) string { return fmt.Sprintf("%.1f", s.BindsPerSec) },
			value:        num(func(s Side) float64 { return s.BindsPerSec }),
			higherBetter: true,
		},
		{
			label: "p50 time to Bound (ms)",
			cell:  func(s Side) string { return fmt.Sprintf("%.1f", p50Ms(s)) },
			value: num(p50Ms),
		},
		{
			label: "p90 time to Bound (ms)",
			cell:  func(s Side) string { return fmt.Sprintf("%.1f", p90Ms(s)) },
			value: num(p90Ms),
		},
		{
			label: "p99 time to Bound (ms)",
			cell:  func(s Side) string { return fmt.Sprintf("%.1f", p99Ms(s)) },
			value: num(p99Ms),
		},
		{
			label: "API writes per bind",
			cell:  func(s Side) string { return fmt.Sprintf("%.2f", s.WritesPerBind) },
			value: num(func(s Side) float64 { return s.WritesPerBind }),
		},
		{
			label: "events",
			cell:  func(s Side) string { return fmt.Sprintf("%d", s.Events) },
			value: num(func(s Side) float64 { return float64(s.Events) }),
		},
		{
			label: "controller CPU per bind (ms)",
			cell:  func(s Side) string { return fmt.Sprintf("%.3f", s.CPUMsPerBind) },
			value: num(func(s Side) float64 { return s.CPUMsPerBind }),
		},
		{
			label: "peak RSS (MiB)",
			cell:  func(s Side) string { return fmt.Sprintf("%.1f", mib(s.PeakRSSBytes)) },
			value: num(func(s Side) float64 { return float64(s.PeakRSSBytes) }),
		},
		{
			label: "control plane CPU per bind (ms)",
			cell:  func(s Side) string { return fmt.Sprintf("%.3f", s.ControlPlaneCPUMsPerBind) },
			value: num(func(s Side) float64 { return s.ControlPlaneCPUMsPerBind }),
		},
		{
			// Not a cost of the side alone: no ratio.
			label: "machine CPU busy (%)",
			cell:  func(s Side) string { return fmt.Sprintf("%.1f", 100*s.MachineBusy) },
		},
	}
}

// rows are the rows of r's scenario: after the time to Bound's
// percentiles the attach scenario adds the time from a VolumeAttachment
// seen to attached, the dynamic scenario the time from a claim's create to
// its PV seen.
func (r Report) rows() []row {
	all := rows()
	at := slices.IndexFunc(all, func(rw row) bool { return rw.label == "p99 time to Bound (ms)" }) + 1
	va := func(label string, f func(Side) float64) row {
		return row{label: label, cell: func(s Side) string { return fmt.Sprintf("%.1f", f(s)) },
			value: func(s Side) (float64, bool) { return f(s), true }}
	}
	if r.Scenario == Dynamic {
		return slices.Insert(all, at,
			va("p50 claim created → PV seen (ms)", func(s Side) float64 { return s.PVP50Ms }),
			va("p90 claim created → PV seen (ms)", func(s Side) float64 { return s.PVP90Ms }),
			va("p99 claim created → PV seen (ms)", func(s Side) float64 { return s.PVP99Ms }))
	}
	if r.Scenario != Attach {
		return all
	}
	return slices.Insert(all, at,
		va("p50 VA seen → attached (ms)", func(s Side) float64 { return s.VAP50Ms }),
		va("p90 VA seen → attached (ms)", func(s Side) float64 { return s.VAP90Ms }),
		va("p99 VA seen → attached (ms)", func(s Side) float64 { return s.VAP99Ms }))
}

// The percentiles in milliseconds: the Ms fields, which survive JSON, or
// the durations when only those were filled in.
func p50Ms(s Side) float64 { return msOr(s.P50Ms, s.P50) }
func p90Ms(s Side) float64 { return msOr(s.P90Ms, s.P90) }
func p99Ms(s Side) float64 { return msOr(s.P99Ms, s.P99) }

func msOr(ms float64, d time.Duration) float64 {
	if ms == 0 && d != 0 {
		return float64(d) / float64(time.Millisecond)
	}
	return ms
}

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// ratio is the ratio column's cell for a ÷ b: "3.70x better",
// "1.25x worse", "1.00x same", "0.0017x better" (two significant digits
// below 0.1), or "n/a" when there is nothing to divide.
func ratio(r row, a, b Side) string {
	if r.value == nil {
		return ""
	}
	va, oka := r.value(a)
	vb, okb := r.value(b)
	if !oka || !okb {
		return "n/a"
	}
	if vb == 0 {
		if va == 0 {
			return "1.00x same"
		}
		return "n/a"
	}
	q := va / vb
	if math.IsNaN(q) || math.IsInf(q, 0) {
		return "n/a"
	}
	s := fmt.Sprintf("%.2fx", q)
	if q > 0 && q < 0.1 {
		// Two decimals would print 0.00x for a trickle's 10 ms against 7 s.
		s = fmt.Sprintf("%.2gx", q)
	}
	switch {
	case s == "1.00x":
		return s + " same"
	case (q > 1) == r.higherBetter:
		return s + " better"
	default:
		return s + " worse"
	}
}

// comparison returns the two sides the ratio column compares, volplane
// first, when r has exactly two sides.
func (r Report) comparison() (a, b Side, ok bool) {
	if len(r.Sides) != 2 {
		return Side{}, Side{}, false
	}
	a, b = r.Sides[0], r.Sides[1]
	if a.Name == Reference && b.Name == Volplane {
		a, b = b, a
	}
	return a, b, true
}

// WriteText writes r as a table a person reads: a few header lines, then
// one row per measure and one column per Side, with a ratio column when
// there are two sides, and the API server's ceiling when it was measured.
func (r Report) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "scenario:      %s\n", r.Scenario)
	fmt.Fprintf(&b, "pairs:         %d\n", r.Pairs)
	fmt.Fprintf(&b, "client limits: %s\n", r.Limits())
	fmt.Fprintf(&b, "workers:       %d\n", r.Workers)
	if !r.Started.IsZero() {
		fmt.Fprintf(&b, "started:       %s\n", r.Started.Format(time.RFC3339))
	}
	if len(r.Sides) == 0 {
		b.WriteString("\nno side was measured\n")
		_, err := io.WriteString(w, b.String())
		return err
	}
	b.WriteString("\n")

	va, vb, compare := r.comparison()
	tw := tabwriter.NewWriter(&b, 0, 0, 3, ' ', 0)
	for _, s := range r.Sides {
		fmt.Fprintf(tw, "\t%s", s.Name)
	}
	if compare {
		fmt.Fprintf(tw, "\t%s ÷ %s", va.Name, vb.Name)
	}
	fmt.Fprint(tw, "\n")
	for _, rw := range r.rows() {
		// In the scenario's words before the columns are aligned.
		fmt.Fprint(tw, r.wording(rw.label))
		for _, s := range r.Sides {
			fmt.Fprintf(tw, "\t%s", rw.cell(s))
		}
		if compare {
			fmt.Fprintf(tw, "\t%s", ratio(rw, va, vb))
		}
		fmt.Fprint(tw, "\n")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if compare {
		fmt.Fprintf(&b, "\nratio = %s ÷ %s; binds/s: higher is better; every other row is a cost: lower is better\n",
			va.Name, vb.Name)
	}

	if c := r.Ceiling; c != nil {
		fmt.Fprintf(&b, "\nAPI server ceiling (%d writes in %.2f s):\n", c.Writes, c.Seconds)
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		for _, s := range r.Sides {
			possible := c.BindsPossible(s.WritesPerBind)
			if possible <= 0 {
				fmt.Fprintf(tw, "  %s\t%.1f writes/s → binds/s possible = n/a (no writes per bind measured)\n",
					s.Name, c.WritesPerSec)
				continue
			}
			fmt.Fprintf(tw, "  %s\t%.1f writes/s → binds/s possible = %.1f ÷ %.2f writes per bind = %.1f;\treached %.1f binds/s =\t%.1f%% of possible\n",
				s.Name, c.WritesPerSec, c.WritesPerSec, s.WritesPerBind, possible, s.BindsPerSec, 100*s.BindsPerSec/possible)
			if ww := s.WorkloadWritesPerBind; ww > 0 {
				all := c.BindsPossible(s.WritesPerBind + ww)
				fmt.Fprintf(tw, "  %s\twith the workload's %.2f writes per bind: possible = %.1f ÷ %.2f = %.1f;\treached\t%.1f%% of possible\n",
					s.Name, ww, c.WritesPerSec, s.WritesPerBind+ww, all, 100*s.BindsPerSec/all)
			}
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	r.writeMeasured(&b)
	r.writeBreakdown(&b)
	_, err := io.WriteString(w, r.wording(b.String()))
	return err
}

// writeMeasured adds each measured process's CPU per bind and peak RSS,
// for the sides that measured several.
func (r Report) writeMeasured(b *strings.Builder) {
	var lines []string
	for _, s := range r.Sides {
		for _, p := range s.Measured {
			lines = append(lines, fmt.Sprintf("  %s\tCPU %.2f s = %.3f ms per bind,\tpeak RSS %.1f MiB\n",
				p.Name, p.CPUSeconds, 1000*p.CPUSeconds/float64(max(s.Bound, 1)), mib(p.PeakRSSBytes)))
		}
	}
	if len(lines) == 0 {
		return
	}
	b.WriteString("\nmeasured processes:\n")
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	for _, l := range lines {
		fmt.Fprint(tw, l)
	}
	_ = tw.Flush()
}

// Names of the files WriteFiles writes.
const (
	ReportJSON = "report.json"
	BoundPNG   = "bound.png"
)

// WriteFiles saves r in dir, creating it if missing: report.json (r as
// indented JSON) and bound.png (claims Bound over time, one line per Side).
// Each file is written under a temporary name and renamed into place, so
// an interrupted run leaves either the old file or the new one.
func WriteFiles(r Report, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	js, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding the report: %w", err)
	}
	js = append(js, '\n')
	if err := writeAtomic(filepath.Join(dir, ReportJSON), func(w io.Writer) error {
		_, err := w.Write(js)
		return err
	}); err != nil {
		return err
	}
	img, err := boundPlot(r)
	if err != nil {
		return fmt.Errorf("plotting claims bound: %w", err)
	}
	return writeAtomic(filepath.Join(dir, BoundPNG), func(w io.Writer) error {
		_, err := img.WriteTo(w)
		return err
	})
}

// writeAtomic writes path's new content with write into a temporary file
// next to it, syncs it and renames it over path.
func writeAtomic(path string, write func(io.Writer) error) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err := write(f); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Chmod(0o644); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
