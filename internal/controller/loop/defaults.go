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

// The per-key backoff bounds of a failed sync, external-snapshotter's and
// external-attacher's (--retry-interval-start 1s, --retry-interval-max 5m).
const (
	DefaultRetryStart = time.Second
	DefaultRetryMax   = 5 * time.Minute
)

// Settings are the knobs of a loop's Runner and queues. A loop embeds them
// in its Config and calls WithDefaults, so that every loop fills them in
// the same way.
type Settings struct {
	// Workers is the number of workers per queue.
	Workers int
	// ResyncPeriod is how often the safety-net resync runs (loops that
	// have one).
	ResyncPeriod time.Duration
	// RetryStart and RetryMax bound the per-key backoff of failed syncs
	// and of waits.
	RetryStart, RetryMax time.Duration
}

// WithDefaults returns s with every setting that is not positive replaced
// by its default, and RetryMax raised to at least RetryStart (a max below
// the start is taken as unset).
func (s Settings) WithDefaults() Settings {
	s.Workers, s.ResyncPeriod = WithDefaults(s.Workers, s.ResyncPeriod)
	if s.RetryStart <= 0 {
		s.RetryStart = DefaultRetryStart
	}
	if s.RetryMax < s.RetryStart {
		s.RetryMax = max(DefaultRetryMax, s.RetryStart)
	}
	return s
}
