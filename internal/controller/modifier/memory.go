package modifier

import (
	"sync"
	"time"
)

// memory is what the loop knows of its earlier calls, per claim key:
// whose last ControllerModifyVolume ended for sure (a final answer), and
// since when a claim's target has been infeasible.
type memory struct {
	mu         sync.Mutex
	settled    map[string]bool
	infeasible map[string]time.Time
}

func newMemory() *memory {
	return &memory{settled: map[string]bool{}, infeasible: map[string]time.Time{}}
}

// uncertain says whether the driver may still be working on the claim's
// last call: not known to have ended (after a restart nothing is known).
func (m *memory) uncertain(key string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return !m.settled[key]
}

// slowRetryLeft is how long the key's slow retry still runs at now.
func (m *memory) slowRetryLeft(key string, now time.Time, period time.Duration) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	start, ok := m.infeasible[key]
	if !ok {
		return 0
	}
	return max(0, start.Add(period).Sub(now))
}

// answered records the outcome of a call that failed: final or not, and
// whether infeasible (which starts a slow retry).
func (m *memory) answered(key string, final, infeasible bool, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.settled[key] = final
	if infeasible {
		m.infeasible[key] = now
	} else {
		delete(m.infeasible, key)
	}
}

// started records that a new modification starts: whatever was remembered
// belongs to an earlier target.
func (m *memory) started(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.settled[key] = true
	delete(m.infeasible, key)
}

// forget drops the key: the modification succeeded, or the claim is gone.
func (m *memory) forget(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.settled, key)
	delete(m.infeasible, key)
}
