package bench

import (
	"slices"
	"testing"
)

// Claims grown at once on `volplane up`: N bound, unused claims of the
// default class (volplane-hostpath, node-local, controller-only expansion)
// have their request raised from 1Mi to 2Mi, each case on a fresh control
// plane:
//
//	go test -run '^$' -bench 'Expand/' -benchtime 1x -timeout 60m ./bench/
//
// VOLPLANE_BENCH_N is the number of claims, one value or a comma-separated
// list (default "100,1000"). The clock runs from each claim's PATCH of its
// request to the moment a claim watch sees status.capacity at 2Mi.
//
// The stack of `up` runs (stacktest.StartStack), but the expander and the
// resizer each run in a manager of their own, with a client that counts its
// API writes. Cases:
//   - reference-limits: the expander at kube-controller-manager's client
//     limits (20 QPS, burst 30), the resizer at the external-resizer's (5
//     QPS, burst 10);
//   - unthrottled: both unthrottled.
//
// Reported: request raised to capacity seen (p50, p99, max, in ms), the time
// until all are expanded (s), the CPU cores the process kept busy, and per
// expansion the API writes (events apart) of the expander and the resizer,
// counted until the writes settle. The reference spends, per controller-only
// expansion, no write and one event in kube-controller-manager's expander
// (ExternalExpanding) and three writes in the external-resizer (claim status
// to ControllerResizeInProgress, PV capacity, claim status finished) plus
// two events (Resizing, VolumeResizeSuccessful).
func BenchmarkExpand(b *testing.B) {
	benchCases(b, "BenchmarkExpandCase", expandResult.report)
}

// The clients of the expansion loops, counted apart.
const (
	clientExpander = "expander"
	clientResizer  = "resizer"
)

// BenchmarkExpandCase is the body of one case; it runs only in a child
// started by BenchmarkExpand.
func BenchmarkExpandCase(b *testing.B) {
	caseBody(b, "BenchmarkExpand", runExpandCase)
}

// expandResult is what one case measured.
type expandResult struct {
	// Latencies are each claim's request-raised-to-capacity-seen, in
	// seconds, sorted.
	Latencies []float64
	// All is the time from the first PATCH until the last claim was seen
	// expanded, in seconds.
	All float64
	// CPUSeconds is the CPU time of the whole process meanwhile.
	CPUSeconds float64
	// Writes are each client's writes by "VERB resource[/subresource]",
	// events included.
	Writes map[string]map[string]int64
}

func (r expandResult) report(b *testing.B, name string, n int) {
	b.ReportMetric(quantile(r.Latencies, 0.5)*1000, "p50-ms")
	b.ReportMetric(quantile(r.Latencies, 0.99)*1000, "p99-ms")
	b.ReportMetric(quantile(r.Latencies, 1)*1000, "max-ms")
	b.ReportMetric(r.All, "s-all")
	if r.All > 0 {
		b.ReportMetric(r.CPUSeconds/r.All, "cpu-cores")
	}
	for _, c := range []string{clientExpander, clientResizer} {
		w, ev := splitEvents(r.Writes[c])
		b.ReportMetric(float64(w)/float64(n), "writes/expansion-"+c)
		b.ReportMetric(float64(ev)/float64(n), "events/expansion-"+c)
	}
	for _, c := range slices.Sorted(func(yield func(string) bool) {
		for k := range r.Writes {
			if !yield(k) {
				return
			}
		}
	}) {
		w, ev := splitEvents(r.Writes[c])
		b.Logf("%s: %s %.2f writes/expansion (+%.2f events) %v", name, c, float64(w)/float64(n), float64(ev)/float64(n), r.Writes[c])
	}
}
