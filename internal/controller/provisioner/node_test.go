package provisioner

import (
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

// A node's wait for a claim counts from when it first saw the claim,
// grows with the claims it won meanwhile and with this claim's conflicts,
// and forgets wins older than the max delay.
func TestRaceMemoryWaitsLongerOnABusyNode(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	r := newRaceMemory(NodeDeployment{NodeName: "node-1", BaseDelay: time.Second, MaxDelay: 10 * time.Second,
		Clock: clk, Jitter: func() float64 { return 0.5 }})
	step := func(what string, got, want time.Duration) {
		t.Helper()
		if got != want {
			t.Errorf("%s: wait %s, want %s", what, got, want)
		}
	}
	step("an idle node, a new claim", r.wait("a"), 500*time.Millisecond)
	clk.SetTime(clk.Now().Add(500 * time.Millisecond))
	step("the same claim once its delay passed", r.wait("a"), 0)
	step("a second claim, first seen now", r.wait("b"), 500*time.Millisecond)
	r.won("a")
	step("after winning one: a base delay more", r.wait("b"), 1500*time.Millisecond)
	r.conflicted("b")
	step("after a conflict: from now, doubled", r.wait("b"), 3*time.Second)
	clk.SetTime(clk.Now().Add(2 * time.Second))
	step("the first win is still recent", r.wait("b"), time.Second)
	clk.SetTime(clk.Now().Add(9 * time.Second))
	if w := r.wait("b"); w > 0 {
		t.Errorf("long after the claim was first seen: wait %s, want none", w)
	}
	step("a new claim once the win is older than the max delay", r.wait("c"), 500*time.Millisecond)
	r.settled("b")
	step("a settled claim starts afresh", r.wait("b"), 500*time.Millisecond)
}
