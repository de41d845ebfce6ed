package resizing

import (
	"testing"
	"time"
)

// What each loop asks the memory after each outcome: the resizer whether a
// final error was seen and whether the driver refused the volume as in use,
// the modifier whether the driver may still be working (not Ended), both
// how long a slow retry has left.
func TestMemoryRemembersTheLastAnswer(t *testing.T) {
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	period := 5 * time.Minute
	m := NewMemory()
	if m.Ended("k") || m.RefusedInUse("k") || m.SlowRetryLeft("k", now, period) != 0 {
		t.Fatal("a new memory knows something")
	}
	for _, tc := range []struct {
		o           Outcome
		ended, used bool
		left        time.Duration
	}{
		{MayBeRunning, false, false, 0},
		{Ended, true, false, 0},
		{EndedInUse, true, true, 0},
		{EndedInfeasible, true, false, period},
	} {
		m.Answered("k", tc.o, now)
		if m.Ended("k") != tc.ended || m.RefusedInUse("k") != tc.used || m.SlowRetryLeft("k", now, period) != tc.left {
			t.Errorf("after %d: ended %v, in use %v, left %s", tc.o, m.Ended("k"), m.RefusedInUse("k"), m.SlowRetryLeft("k", now, period))
		}
	}
	// A call starting clears the refusal and the slow retry; nothing of ours
	// runs until it answers.
	m.Answered("k", EndedInUse, now)
	m.Calling("k")
	if !m.Ended("k") || m.RefusedInUse("k") || m.SlowRetryLeft("k", now, period) != 0 {
		t.Error("a call starting kept what earlier calls told")
	}
	m.Forget("k")
	if m.Ended("k") {
		t.Error("forgotten, still ended")
	}
}

// A slow retry runs for its period from its start; starting one while it
// runs keeps its start, once it is over starts a new one.
func TestSlowRetryStartsOncePerPeriod(t *testing.T) {
	start := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	period := 5 * time.Minute
	m := NewMemory()
	m.Answered("k", Ended, start)
	m.StartSlowRetry("k", start, period)
	if !m.Ended("k") {
		t.Error("starting a slow retry forgot the final error")
	}
	m.StartSlowRetry("k", start.Add(time.Minute), period)
	if left := m.SlowRetryLeft("k", start.Add(time.Minute), period); left != 4*time.Minute {
		t.Errorf("left %s while running, want 4m", left)
	}
	m.StartSlowRetry("k", start.Add(period), period)
	if left := m.SlowRetryLeft("k", start.Add(period), period); left != period {
		t.Errorf("left %s after a restart at the end, want %s", left, period)
	}
	if left := m.SlowRetryLeft("k", start.Add(3*period), period); left != 0 {
		t.Errorf("left %s long after, want 0", left)
	}
}
