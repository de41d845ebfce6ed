package conformance

import (
	"context"
	"testing"

	"github.com/volplane/volplane/internal/conformance"
)

// BenchmarkConformanceBundled times the whole suite against the bundled
// network driver; each scenario's mean time is reported as a metric of
// its own (seconds per run).
func BenchmarkConformanceBundled(b *testing.B) {
	lab := networkLab(b)
	took := map[string]float64{}
	for b.Loop() {
		report := conformance.Run(context.Background(), lab, conformance.Options{})
		if !report.Passed() {
			b.Fatalf("the suite failed: %+v", report.Results)
		}
		for _, r := range report.Results {
			if r.Status == conformance.Pass {
				took[r.Name] += r.Duration.Seconds()
			}
		}
	}
	for name, s := range took {
		b.ReportMetric(s/float64(b.N), name+"-s")
	}
}
