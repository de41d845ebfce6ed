package loop

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Recent remembers when each key of a queue was last synced, so that a
// periodic resync can skip what was just looked at. Without it, a resync
// during a large backlog re-queues every object not yet at rest, many of
// them synced moments ago, and the extra syncs grow with the backlog: the
// cost of a run became quadratic in its size.
//
// Safe for concurrent use. Entries older than what any caller asks about
// are dropped by Forget, so memory is bounded by what was synced lately.
type Recent struct {
	mu    sync.Mutex
	last  map[string]time.Time
	clock clock.PassiveClock
}

// NewRecent returns an empty Recent on the wall clock.
func NewRecent() *Recent { return &Recent{last: map[string]time.Time{}, clock: clock.RealClock{}} }

// Synced records that key's sync just ended.
func (r *Recent) Synced(key string) {
	now := r.clock.Now()
	r.mu.Lock()
	r.last[key] = now
	r.mu.Unlock()
}

// Stale says whether key was not synced within the last period: never, or
// longer ago. A stale unsettled object is worth a resync; a fresh one was
// just looked at, and any change to it brings an event anyway.
func (r *Recent) Stale(key string, period time.Duration) bool {
	r.mu.Lock()
	t, ok := r.last[key]
	r.mu.Unlock()
	return !ok || r.clock.Now().Sub(t) >= period
}

// ForgetOlder drops the keys last synced longer than age ago: they answer
// Stale for any period up to age either way.
func (r *Recent) ForgetOlder(age time.Duration) {
	cutoff := r.clock.Now().Add(-age)
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, t := range r.last {
		if t.Before(cutoff) {
			delete(r.last, k)
		}
	}
}
