package csi

import (
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// A driver names itself in GetPluginInfo; a name that is not valid UTF-8
// must not make the Prometheus client panic inside a CSI call, and the
// histogram must still gather.
func TestCallOfADriverWithANameThatIsNotUTF8IsMeasured(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	m.observe("drv\xff", "CreateVolume", errors.New("boom"), time.Now())
	got, err := reg.Gather()
	if err != nil || len(got) != 1 || len(got[0].GetMetric()) != 1 {
		t.Fatalf("gathered %v, %v; want one series", got, err)
	}
	for _, l := range got[0].GetMetric()[0].GetLabel() {
		if l.GetName() == "driver_name" && l.GetValue() != "drv\uFFFD" {
			t.Errorf("driver_name %q, want the invalid byte replaced", l.GetValue())
		}
	}
}
