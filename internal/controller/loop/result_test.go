package loop

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestEmptyResultsAreDone(t *testing.T) {
	if After(0) != Done() || After(-time.Second) != Done() || Terminal(nil) != Done() {
		t.Error("an empty After or Terminal is not Done")
	}
}

// stuckRun is one runner over a queue, driven key by key on a fake clock.
type stuckRun struct {
	r      *Runner
	q      Queue
	stuck  *stuckKeys
	clock  *clocktesting.FakePassiveClock
	reg    *prometheus.Registry
	answer map[string]func() (Result, error)
}

func newStuckRun(t *testing.T) *stuckRun {
	s := &stuckRun{clock: clocktesting.NewFakePassiveClock(time.Unix(1000, 0)), reg: prometheus.NewRegistry(),
		answer: map[string]func() (Result, error){}}
	m, err := newStuckMetrics(s.reg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := newStuckMetrics(s.reg); err != nil {
		t.Fatalf("a second runner over one registry: %v", err)
	}
	s.r = &Runner{Name: "Test", Workers: 1}
	s.q = Queue{Q: NewQueue("stuck-test", time.Millisecond, time.Millisecond),
		Sync: func(_ context.Context, key string) (Result, error) { return s.answer[key]() }}
	s.stuck = newStuckKeys("Test", s.clock, time.Minute, m)
	t.Cleanup(s.q.Q.ShutDown)
	return s
}

// run syncs key once, as a worker would.
func (s *stuckRun) run(t *testing.T, key string) {
	t.Helper()
	s.q.Q.Add(key)
	for s.q.Q.Len() == 0 { // a rate-limited add may take its backoff first
		time.Sleep(time.Millisecond)
	}
	s.r.processNext(t.Context(), s.q, s.stuck)
}

func (s *stuckRun) stuckNow(why string) float64 {
	m, _ := newStuckMetrics(s.reg)
	return testutil.ToFloat64(m.now.WithLabelValues("Test", why))
}

func (s *stuckRun) stuckTotal(why string) float64 {
	m, _ := newStuckMetrics(s.reg)
	return testutil.ToFloat64(m.total.WithLabelValues("Test", why))
}

// A key failing for longer than the threshold is reported once, however
// often it fails after, and its gauge falls when it succeeds again.
func TestAKeyFailingBeyondTheThresholdIsReportedOnce(t *testing.T) {
	s := newStuckRun(t)
	fail := true
	s.answer["k"] = func() (Result, error) {
		if fail {
			return Done(), errors.New("driver down")
		}
		return Done(), nil
	}
	s.run(t, "k")
	s.clock.SetTime(s.clock.Now().Add(59 * time.Second))
	s.run(t, "k")
	if s.stuckTotal(stuckFailing) != 0 {
		t.Fatal("reported before the threshold")
	}
	for range 3 {
		s.clock.SetTime(s.clock.Now().Add(time.Minute))
		s.run(t, "k")
	}
	if s.stuckTotal(stuckFailing) != 1 || s.stuckNow(stuckFailing) != 1 {
		t.Fatalf("total %v now %v, want 1 and 1", s.stuckTotal(stuckFailing), s.stuckNow(stuckFailing))
	}
	fail = false
	s.run(t, "k")
	if s.stuckNow(stuckFailing) != 0 || s.stuckTotal(stuckFailing) != 1 {
		t.Errorf("after success: now %v total %v, want 0 and 1", s.stuckNow(stuckFailing), s.stuckTotal(stuckFailing))
	}
	// A new episode starts its own clock.
	fail = true
	s.run(t, "k")
	if s.stuckNow(stuckFailing) != 0 {
		t.Error("a first failure after a success counts as stuck")
	}
}

// A Terminal key is not retried, is reported once per episode, and an
// After key comes back by itself.
func TestTerminalIsNotRetriedAndAfterComesBack(t *testing.T) {
	s := newStuckRun(t)
	s.answer["gone"] = func() (Result, error) { return Terminal(errors.New("class refused")), nil }
	s.answer["later"] = func() (Result, error) { return After(time.Millisecond), nil }
	s.run(t, "gone")
	s.run(t, "gone")
	if s.stuckTotal(stuckTerminal) != 1 || s.stuckNow(stuckTerminal) != 1 {
		t.Errorf("terminal total %v now %v, want 1 and 1", s.stuckTotal(stuckTerminal), s.stuckNow(stuckTerminal))
	}
	if s.q.Q.NumRequeues("gone") != 0 {
		t.Error("a terminal key is being retried with backoff")
	}
	s.q.Q.Add("later")
	s.r.processNext(t.Context(), s.q, s.stuck)
	key, _ := s.q.Q.Get() // blocks until AddAfter delivers it
	if key != "later" {
		t.Errorf("got %q back, want later", key)
	}
	s.q.Q.Done(key)
	if s.q.Q.Len() != 0 {
		t.Errorf("%d keys queued, want none: the terminal one must wait for an event", s.q.Q.Len())
	}
}
