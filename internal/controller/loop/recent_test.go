package loop

import (
	"context"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func TestAKeySyncedWithinThePeriodIsNotStale(t *testing.T) {
	now := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	r := NewRecent()
	r.clock = now
	if !r.Stale("never", time.Minute) {
		t.Error("a key never synced is not stale")
	}
	r.Synced("k")
	now.SetTime(now.Now().Add(59 * time.Second))
	if r.Stale("k", time.Minute) {
		t.Error("a key synced 59 s ago is stale for a 1 min period")
	}
	now.SetTime(now.Now().Add(time.Second))
	if !r.Stale("k", time.Minute) {
		t.Error("a key synced a whole period ago is not stale")
	}
}

func TestForgetOlderKeepsOnlyWhatAnswersDifferently(t *testing.T) {
	now := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	r := NewRecent()
	r.clock = now
	r.Synced("old")
	now.SetTime(now.Now().Add(2 * time.Minute))
	r.Synced("new")
	r.ForgetOlder(time.Minute)
	if len(r.last) != 1 {
		t.Errorf("after ForgetOlder %d keys are kept, want only the recent one", len(r.last))
	}
	if !r.Stale("old", time.Minute) || r.Stale("new", time.Minute) {
		t.Error("forgetting changed what Stale answers")
	}
}

// The runner tells a queue's Recent every sync it ran, failed ones too.
func TestTheRunnerRecordsEachSync(t *testing.T) {
	q := NewQueue("recent-test", time.Millisecond, time.Millisecond)
	recent := NewRecent()
	r := &Runner{Name: "Test", Workers: 1}
	q.Add("a")
	r.processNext(t.Context(), Queue{Q: q, Recent: recent, Sync: errorOnly(func(context.Context, string) error { return nil })}, newStuckKeys("Test", nil, 0, nil))
	if recent.Stale("a", time.Hour) {
		t.Error("a synced key is stale")
	}
}
