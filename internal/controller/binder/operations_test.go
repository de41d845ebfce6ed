package binder

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	testingclock "k8s.io/utils/clock/testing"
)

func testOperations(t *testing.T) (*operations, *testingclock.FakePassiveClock) {
	t.Helper()
	m, err := newMetrics(prometheus.NewRegistry(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	clk := testingclock.NewFakePassiveClock(time.Unix(1000, 0))
	return newOperations(m, clk), clk
}

// An operation is timed from its first start to done; starting it again
// while it runs does not reset the clock, and done observes it once.
func TestOperationIsTimedFromItsFirstStart(t *testing.T) {
	o, clk := testOperations(t)
	o.start("ns/c", "example.com/x", opProvision)
	clk.SetTime(clk.Now().Add(3 * time.Second))
	o.start("ns/c", "example.com/x", opProvision)
	clk.SetTime(clk.Now().Add(2 * time.Second))
	o.done("ns/c")
	o.done("ns/c")
	h := o.m.operationSeconds.WithLabelValues("example.com/x", opProvision).(prometheus.Histogram)
	if n := testutil.CollectAndCount(o.m.operationSeconds); n != 1 {
		t.Fatalf("%d series, want 1", n)
	}
	var got = &dtoHistogram{}
	got.read(t, h)
	if got.count != 1 || got.sum != 5 {
		t.Errorf("observed %d operations summing %vs, want one of 5s", got.count, got.sum)
	}
}

// A failure counts an error and keeps timing; a forgotten operation (its
// claim went away unbound) is never observed.
func TestFailedAndForgottenOperations(t *testing.T) {
	o, _ := testOperations(t)
	o.failed("pv-never-started")
	o.start("pv", pluginUnknown, opDelete)
	o.failed("pv")
	o.failed("pv")
	if got := testutil.ToFloat64(o.m.operationErrors.WithLabelValues(pluginUnknown, opDelete)); got != 2 {
		t.Errorf("errors %v, want 2", got)
	}
	o.start("ns/gone", "example.com/x", opProvision)
	o.forget("ns/gone")
	o.done("ns/gone")
	if n := testutil.CollectAndCount(o.m.operationSeconds); n != 0 {
		t.Errorf("%d duration series, want none", n)
	}
}

type dtoHistogram struct {
	count uint64
	sum   float64
}

func (d *dtoHistogram) read(t *testing.T, h prometheus.Histogram) {
	t.Helper()
	ch := make(chan prometheus.Metric, 1)
	h.Collect(ch)
	var m dto.Metric
	if err := (<-ch).Write(&m); err != nil {
		t.Fatal(err)
	}
	d.count, d.sum = m.GetHistogram().GetSampleCount(), m.GetHistogram().GetSampleSum()
}
