package resizing

import (
	"sync"
	"time"
)

// Outcome is what a failed driver call told the loop, as Memory keeps it.
// Each loop names its reference's meaning where it tells them apart.
type Outcome int

const (
	// MayBeRunning: the driver may still be working on the call (the
	// answer is not final in the external-resizer's meaning).
	MayBeRunning Outcome = iota
	// Ended: the driver answered for good; the call is over.
	Ended
	// EndedInUse: Ended, refused because a node uses the volume (a driver
	// that expands only offline).
	EndedInUse
	// EndedInfeasible: Ended, and the request as it stands can never
	// succeed: a slow retry starts.
	EndedInfeasible
)

// Memory is what a loop remembers of its earlier driver calls, per claim
// key. It is lost on restart, as the reference's is: a restarted loop
// knows nothing of the calls before (a call may be running).
type Memory struct {
	mu      sync.Mutex
	entries map[string]entry
}

type entry struct {
	// ended: the last call is known to be over (a final answer, or a new
	// request that no call of ours runs for yet).
	ended bool
	// inUse: the last call was refused as the volume is in use.
	inUse bool
	// infeasibleSince is when the current slow retry started; zero: none.
	infeasibleSince time.Time
}

// NewMemory returns a Memory that knows nothing.
func NewMemory() *Memory { return &Memory{entries: map[string]entry{}} }

// Ended says whether the key's last call is known to be over: the resizer
// then knows the claim ended with a final error, the modifier that the
// driver is not working on it any more.
func (m *Memory) Ended(key string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.entries[key].ended
}

// RefusedInUse says whether the driver refused the key's last call because
// the volume was in use.
func (m *Memory) RefusedInUse(key string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.entries[key].inUse
}

// Calling records that a call is about to be made: what earlier calls told
// no longer stands (no refusal, no slow retry), and until this one
// answers, none of ours runs. Its answer is recorded by Answered (or
// Forget on success).
func (m *Memory) Calling(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.entries[key] = entry{ended: true}
}

// Answered records the outcome of a call that failed; EndedInfeasible
// starts a slow retry at now.
func (m *Memory) Answered(key string, o Outcome, now time.Time) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := entry{ended: o != MayBeRunning, inUse: o == EndedInUse}
	if o == EndedInfeasible {
		e.infeasibleSince = now
	}
	m.entries[key] = e
}

// SlowRetryLeft is how long the key's slow retry of period still runs at
// now (0 when none runs or it is over).
func (m *Memory) SlowRetryLeft(key string, now time.Time, period time.Duration) time.Duration {
	m.mu.Lock()
	defer m.mu.Unlock()
	start := m.entries[key].infeasibleSince
	if start.IsZero() {
		return 0
	}
	return max(0, start.Add(period).Sub(now))
}

// StartSlowRetry starts a slow retry for a claim found infeasible that has
// none running (after a restart, or once the last one is over).
func (m *Memory) StartSlowRetry(key string, now time.Time, period time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e := m.entries[key]
	if e.infeasibleSince.IsZero() || !now.Before(e.infeasibleSince.Add(period)) {
		e.infeasibleSince = now
		m.entries[key] = e
	}
}

// Forget drops the key: the call succeeded, or the claim is gone.
func (m *Memory) Forget(key string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.entries, key)
}
