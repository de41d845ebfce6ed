package provisioning

import (
	"testing"
	"time"
)

func TestRaceDelayGrowsWithWinsAndConflictsAndIsBounded(t *testing.T) {
	const base, maxDelay = 20 * time.Second, 60 * time.Second
	cases := []struct {
		name      string
		jitter    float64
		won       int
		conflicts int
		want      time.Duration
	}{
		{"an idle node waits a jittered part of the base", 0.25, 0, 0, 5 * time.Second},
		{"no jitter: at once", 0, 0, 0, 0},
		{"one claim won lately: behind every idle node", 0.25, 1, 0, 25 * time.Second},
		{"a conflict on this claim doubles the wait", 0.25, 0, 1, 10 * time.Second},
		{"a busy node waits no more than the maximum", 0.5, 10, 0, maxDelay},
		{"many conflicts: no more than the maximum", 0.5, 0, 100, maxDelay},
		{"jitter out of range is clamped", 7, 0, 0, base},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := RaceDelay(base, maxDelay, c.jitter, c.won, c.conflicts); got != c.want {
				t.Errorf("RaceDelay = %s, want %s", got, c.want)
			}
		})
	}
	if got := RaceDelay(0, maxDelay, 0.5, 3, 1); got != 0 {
		t.Errorf("a zero base delay waits %s, want none", got)
	}
}
