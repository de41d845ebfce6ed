package loop

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/client-go/tools/cache"
)

// Two runners of one registry each report the keys waiting in their queues
// under their own name; a runner that stopped is no longer reported.
func TestQueueDepthPerLoop(t *testing.T) {
	reg := prometheus.NewRegistry()
	block := make(chan struct{})
	blocked := make(chan struct{}, 1)
	sync := errorOnly(func(ctx context.Context, _ string) error {
		select {
		case blocked <- struct{}{}:
		default:
		}
		select {
		case <-block:
		case <-ctx.Done():
		}
		return nil
	})
	never := []cache.InformerSynced{func() bool { return true }}
	q1, q2 := NewQueue("one", time.Millisecond, time.Millisecond), NewQueue("two", time.Millisecond, time.Millisecond)
	r1 := &Runner{Name: "One", Workers: 1, Synced: never, Queues: []Queue{{Q: q1, Sync: sync}}, Metrics: reg}
	r2 := &Runner{Name: "Two", Workers: 1, Synced: never, Queues: []Queue{{Q: q2, Sync: sync}}, Metrics: reg}
	ctx1, stop1 := context.WithCancel(context.Background())
	ctx2, stop2 := context.WithCancel(context.Background())
	defer stop2()
	done1 := make(chan error, 1)
	go func() { done1 <- r1.Run(ctx1) }()
	go func() { _ = r2.Run(ctx2) }()
	// One key of One is being synced (blocked), three wait; Two has two.
	q1.Add("a")
	<-blocked
	for _, k := range []string{"b", "c", "d"} {
		q1.Add(k)
	}
	q2.Add("x")
	q2.Add("y")
	want := func(text string) {
		t.Helper()
		for end := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
			err := testutil.GatherAndCompare(reg, strings.NewReader(text), "volplane_loop_queue_depth")
			if err == nil {
				return
			}
			if time.Now().After(end) {
				t.Fatal(err)
			}
		}
	}
	// Two's worker took x and is blocked on it too: y waits.
	want(`# HELP volplane_loop_queue_depth Keys waiting in the loop's work queues (not counting those being synced or waiting out a retry backoff).
# TYPE volplane_loop_queue_depth gauge
volplane_loop_queue_depth{loop="One"} 3
volplane_loop_queue_depth{loop="Two"} 1
`)
	stop1()
	close(block)
	if err := <-done1; err != nil {
		t.Fatal(err)
	}
	want(`# HELP volplane_loop_queue_depth Keys waiting in the loop's work queues (not counting those being synced or waiting out a retry backoff).
# TYPE volplane_loop_queue_depth gauge
volplane_loop_queue_depth{loop="Two"} 0
`)
}
