package stacktest

import (
	"testing"
	"time"
)

// Waits of the e2e packages: short polls, never a sleep on the happy path.
const (
	// PollEvery is how often a condition is checked again.
	PollEvery = 50 * time.Millisecond
	// WaitTimeout is how long Eventually waits for a condition.
	WaitTimeout = 30 * time.Second
)

// Eventually polls cond until it returns "" and fails the test with the last
// description of what was still wrong otherwise. alive, if not nil, is asked
// every round and fails the test at once with its error: loops under test
// that died make every wait fail immediately instead of at its timeout.
func Eventually(t testing.TB, what string, cond func() string, alive func() error) {
	t.Helper()
	deadline := time.Now().Add(WaitTimeout)
	for {
		wrong := cond()
		if wrong == "" {
			return
		}
		if alive != nil {
			if err := alive(); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not reached in %s: %s", what, WaitTimeout, wrong)
		}
		time.Sleep(PollEvery)
	}
}

// Holds asserts cond keeps returning "" for d: for states that must not
// change. The loops get several chances to act wrongly meanwhile.
func Holds(t testing.TB, what string, d time.Duration, cond func() string) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(4 * PollEvery) {
		if wrong := cond(); wrong != "" {
			t.Fatalf("%s: %s", what, wrong)
		}
	}
}
