package groupsnapshot

import (
	"sync"
	"time"
)

// waits counts, per key, the waits in a row (a group the driver has not
// made ready yet), for their backoff.
type waits struct {
	mu sync.Mutex
	n  map[string]int
}

func newWaits() *waits { return &waits{n: map[string]int{}} }

// next is the delay before the key's next look: start, doubled per wait in
// a row, at most max.
func (w *waits) next(key string, start, max time.Duration) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	d := start
	for i := 0; i < w.n[key] && d < max; i++ {
		d *= 2
	}
	w.n[key]++
	return min(d, max)
}

func (w *waits) done(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.n, key)
}
