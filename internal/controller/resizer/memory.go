package resizer

import (
	"sync"
	"time"
)

// memory is what the loop remembers of earlier expansions, per claim key:
// which ended with a final error, and since when a claim's size has been
// infeasible. It is lost on restart, as the reference's is: a restarted
// resizer only asks the driver once more before it knows again.
type memory struct {
	mu         sync.Mutex
	finalError map[string]bool
	infeasible map[string]time.Time // when the current slow retry started
	// inUse: the driver refused the last expansion as the volume is in use
	// (FailedPrecondition: it expands only offline).
	inUse map[string]bool
}

func newMemory() *memory {
	return &memory{finalError: map[string]bool{}, infeasible: map[string]time.Time{}, inUse: map[string]bool{}}
}

// refusedInUse says whether the driver refused the key's last expansion
// because the volume was in use.
func (m *memory) refusedInUse(key string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.inUse[key]
}

// setRefusedInUse records (or clears, before the next call) that refusal.
func (m *memory) setRefusedInUse(key string, refused bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if refused {
		m.inUse[key] = true
	} else {
		delete(m.inUse, key)
	}
}

func (m *memory) hasFinalError(key string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.finalError[key]
}

// slowRetryLeft is how long the key's slow retry still runs at now (0 when
// none runs or it is over).
func (m *memory) slowRetryLeft(key string, now time.Time, period time.Duration) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	start, ok := m.infeasible[key]
	if !ok {
		return 0
	}
	return max(0, start.Add(period).Sub(now))
}

// failedFinal records a final error; infeasible ones start a slow retry.
func (m *memory) failedFinal(key string, infeasible bool, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.finalError[key] = true
	if infeasible {
		m.infeasible[key] = now
	} else {
		delete(m.infeasible, key)
	}
}

// startSlowRetry starts a slow retry for a claim found infeasible that has
// none running (after a restart, or once the last one is over).
func (m *memory) startSlowRetry(key string, now time.Time, period time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if start, ok := m.infeasible[key]; !ok || !now.Before(start.Add(period)) {
		m.infeasible[key] = now
	}
}

// forget drops the key: the expansion succeeded, or the claim is gone.
func (m *memory) forget(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.finalError, key)
	delete(m.infeasible, key)
	delete(m.inUse, key)
}
