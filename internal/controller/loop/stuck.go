package loop

import (
	"errors"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"
)

// DefaultStuckAfter is how long a key may keep failing before the runner
// logs it at error level and counts it: long enough that conflicts and a
// driver's restart pass unseen, short enough that an operator sees a claim
// failing forever in the default logs the same hour.
const DefaultStuckAfter = 5 * time.Minute

// The ways a key is stuck, as the label "why" of the stuck-key metrics.
const (
	stuckFailing  = "failing"  // errors for longer than StuckAfter
	stuckTerminal = "terminal" // a sync gave it up (Terminal)
)

// stuckKeys tracks, per key of one runner, since when it fails and whether
// it was reported, so each stuck key is logged once.
type stuckKeys struct {
	clock   clock.PassiveClock
	after   time.Duration
	metrics *stuckMetrics
	loop    string

	mu       sync.Mutex
	since    map[string]time.Time // first failure of a failing key
	reported map[string]string    // stuck keys reported, by why
}

func newStuckKeys(loop string, c clock.PassiveClock, after time.Duration, m *stuckMetrics) *stuckKeys {
	if c == nil {
		c = clock.RealClock{}
	}
	if after <= 0 {
		after = DefaultStuckAfter
	}
	return &stuckKeys{clock: c, after: after, metrics: m, loop: loop,
		since: map[string]time.Time{}, reported: map[string]string{}}
}

// failed records a failure of key and says whether it just became stuck
// (failing for longer than after, not reported yet) and since when.
func (s *stuckKeys) failed(key string) (stuck bool, since time.Time) {
	now := s.clock.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	since, ok := s.since[key]
	if !ok {
		s.since[key] = now
		return false, now
	}
	if now.Sub(since) < s.after || s.reported[key] != "" {
		return false, since
	}
	s.report(key, stuckFailing)
	return true, since
}

// gaveUp records a Terminal result and says whether it is news for key.
func (s *stuckKeys) gaveUp(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.since, key)
	if s.reported[key] == stuckTerminal {
		return false
	}
	s.clear(key)
	s.report(key, stuckTerminal)
	return true
}

// succeeded ends what is tracked of key and says whether it had been
// reported stuck.
func (s *stuckKeys) succeeded(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.since, key)
	return s.clear(key)
}

func (s *stuckKeys) report(key, why string) {
	s.reported[key] = why
	if s.metrics != nil {
		s.metrics.total.WithLabelValues(s.loop, why).Inc()
		s.metrics.now.WithLabelValues(s.loop, why).Inc()
	}
}

func (s *stuckKeys) clear(key string) bool {
	why, ok := s.reported[key]
	if !ok {
		return false
	}
	delete(s.reported, key)
	if s.metrics != nil {
		s.metrics.now.WithLabelValues(s.loop, why).Dec()
	}
	return true
}

// stuckMetrics are shared by every runner of a registry.
type stuckMetrics struct {
	total *prometheus.CounterVec
	now   *prometheus.GaugeVec
}

// newStuckMetrics registers the stuck-key metrics, or finds them where
// another runner registered them already.
func newStuckMetrics(reg prometheus.Registerer) (*stuckMetrics, error) {
	total := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "volplane_loop_stuck_keys_total",
		Help: "Keys that kept failing beyond the loop's threshold (why=failing) or that a sync gave up (why=terminal), each counted once per episode.",
	}, []string{"loop", "why"})
	now := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "volplane_loop_stuck_keys",
		Help: "Keys stuck now: failing beyond the loop's threshold (why=failing) or given up (why=terminal) and not synced successfully since.",
	}, []string{"loop", "why"})
	var err error
	if total, err = register(reg, total); err != nil {
		return nil, err
	}
	if now, err = register(reg, now); err != nil {
		return nil, err
	}
	return &stuckMetrics{total: total, now: now}, nil
}

func register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	err := reg.Register(c)
	var already prometheus.AlreadyRegisteredError
	if errors.As(err, &already) {
		if existing, ok := already.ExistingCollector.(C); ok {
			return existing, nil
		}
	}
	return c, err
}
