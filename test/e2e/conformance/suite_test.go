package conformance

import (
	"bytes"
	"context"
	"testing"

	"github.com/volplane/volplane/internal/conformance"
)

// Every scenario that applies to a bundled driver passes against it.
func TestBundledDriversPass(t *testing.T) {
	labs := map[string]func(testing.TB) *conformance.Lab{"network": networkLab, "node-local": localLab, "restartable": restartLab}
	for _, name := range []string{"network", "node-local", "restartable"} {
		t.Run(name, func(t *testing.T) {
			lab := labs[name](t)
			report := conformance.Run(context.Background(), lab, conformance.Options{})
			var b bytes.Buffer
			if err := report.WriteText(&b); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s:\n%s", lab.Driver, b.String())
			if lab.InjectedFaults != nil {
				t.Logf("%d calls faulted", lab.InjectedFaults())
			}
			run, _ := conformance.Select(lab)
			if got := report.Count(conformance.Pass) + report.Count(conformance.Fail); got != len(run) {
				t.Errorf("%d scenarios ran, want the %d that apply", got, len(run))
			}
			if !report.Passed() {
				t.Errorf("the bundled %s driver fails the conformance suite", name)
			}
		})
	}
}
