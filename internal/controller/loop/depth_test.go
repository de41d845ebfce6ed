package loop

import (
	"context"
	"errors"
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

// Every sync a runner runs is counted under its loop, failed ones too.
func TestSyncsAreCountedPerLoop(t *testing.T) {
	reg := prometheus.NewRegistry()
	synced := make(chan string, 10)
	sync := errorOnly(func(_ context.Context, key string) error {
		synced <- key
		if key == "bad" {
			return errors.New("bad key")
		}
		return nil
	})
	q := NewQueue("count", time.Hour, time.Hour) // a failed key is not retried during the test
	r := &Runner{Name: "Counted", Workers: 1, Synced: []cache.InformerSynced{func() bool { return true }},
		Queues: []Queue{{Q: q, Sync: sync}}, Metrics: reg}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	for _, k := range []string{"a", "bad", "b"} {
		q.Add(k)
		<-synced
	}
	stop()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if got := testutil.ToFloat64(r.syncs); got != 3 {
		t.Errorf("volplane_loop_syncs_total{loop=Counted} = %v, want 3", got)
	}
	if n, err := testutil.GatherAndCount(reg, "volplane_loop_syncs_total"); err != nil || n != 1 {
		t.Errorf("series of volplane_loop_syncs_total: %d (%v), want 1", n, err)
	}
}
