package loop

import (
	"sync"
	"time"
)

// Waits counts, per key, the looks in a row at something not done yet (a
// snapshot or a group the driver has not made ready, a deletion not
// released), for their backoff: the runner's rate limiter backs off
// failures only, and a look that found nothing wrong is not one. The zero
// value is ready to use.
type Waits struct {
	mu sync.Mutex
	n  map[string]int
}

// Next is the delay before the key's next look: start, doubled per wait in
// a row, at most max.
func (w *Waits) Next(key string, start, max time.Duration) time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.n == nil {
		w.n = map[string]int{}
	}
	d := start
	for i := 0; i < w.n[key] && d < max; i++ {
		d *= 2
	}
	w.n[key]++
	return min(d, max)
}

// Waiting says whether the key is waiting out a backoff.
func (w *Waits) Waiting(key string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n[key] > 0
}

// Done forgets the key's waits.
func (w *Waits) Done(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.n, key)
}
