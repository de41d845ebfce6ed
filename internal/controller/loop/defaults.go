package loop

import "time"

// The settings every loop shares, in one place: each loop fills in what its
// Config leaves zero from these, and `volplane controller` shows them as its
// flag defaults (through manager.DefaultConfig).
const (
	// DefaultWorkers is the number of workers per queue. A sync mostly waits
	// on the API server (a bind is four writes in a row), so more workers
	// pipeline more writes: `volplane bench --pairs 2000 --workers W`
	// reached 78, 83, 85 and 100% of the API server's ceiling with 2, 4, 8
	// and 16 workers, CPU per bind no higher.
	DefaultWorkers = 16
	// DefaultResyncPeriod is how often the safety-net resync revisits
	// objects not at rest.
	DefaultResyncPeriod = 15 * time.Second
)

// WithDefaults returns workers and resync, each replaced by its default
// when not positive.
func WithDefaults(workers int, resync time.Duration) (int, time.Duration) {
	if workers <= 0 {
		workers = DefaultWorkers
	}
	if resync <= 0 {
		resync = DefaultResyncPeriod
	}
	return workers, resync
}
