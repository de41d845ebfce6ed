package loop

import "time"

// Result is what a sync asks of its runner for the key it handled, beside
// its error. The runner owns every retry: no sync queues its own key again.
//
//   - Done: nothing more until an event or the resync brings the key back.
//   - Again: sync the key again at once (its own write changed what the
//     next step decides, and the informer's event of an own write wakes
//     nothing).
//   - After(d): sync the key again after d, unless an event does sooner.
//   - Terminal(reason): the key failed in a way retrying will not fix (the
//     driver refused for good, the user must change the object): it is not
//     retried until an event brings it back, and the reason is logged at
//     error level once and counted.
//
// A non-nil error, whatever the Result, retries the key with per-key
// exponential backoff; a key that keeps failing beyond the runner's
// StuckAfter is logged at error level once and counted too.
type Result struct {
	again    bool
	after    time.Duration
	terminal error
}

// Done is the Result of a sync that finished its key.
func Done() Result { return Result{} }

// Again is the Result of a sync that wants its key again at once.
func Again() Result { return Result{again: true} }

// After is the Result of a sync that wants its key again after d; d <= 0 is
// Done.
func After(d time.Duration) Result {
	if d <= 0 {
		return Done()
	}
	return Result{after: d}
}

// Terminal is the Result of a sync that gave its key up for reason, until
// an event brings it back. A nil reason is Done.
func Terminal(reason error) Result { return Result{terminal: reason} }

// Immediately says whether the key is synced again at once (Again).
func (r Result) Immediately() bool { return r.again }

// RequeueAfter is how long until the key is synced again; 0 for Done,
// Again and Terminal.
func (r Result) RequeueAfter() time.Duration { return r.after }

// Reason is why a Terminal result gave up; nil otherwise.
func (r Result) Reason() error { return r.terminal }
