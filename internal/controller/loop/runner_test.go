package loop

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
)

// A runner syncs every queued key, retries failed ones (conflicts too) until
// they succeed, is ready only while its workers run, and stops with ctx.
func TestRunnerSyncsRetriesAndStops(t *testing.T) {
	var mu sync.Mutex
	calls := map[string]int{}
	q := NewQueue("test", time.Millisecond, 10*time.Millisecond)
	r := &Runner{Name: "Test", Workers: 2, Synced: []cache.InformerSynced{func() bool { return true }},
		Queues: []Queue{{Q: q, Sync: errorOnly(func(_ context.Context, key string) error {
			mu.Lock()
			defer mu.Unlock()
			calls[key]++
			switch {
			case key == "flaky" && calls[key] < 3:
				return errors.New("not yet")
			case key == "stale" && calls[key] < 2:
				return apierrors.NewConflict(schema.GroupResource{Resource: "persistentvolumes"}, key, errors.New("stale"))
			}
			return nil
		})}}}
	if r.Ready() {
		t.Fatal("ready before running")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	for _, k := range []string{"a", "flaky", "stale"} {
		q.Add(k)
	}
	for end := time.Now().Add(5 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		mu.Lock()
		settled := calls["a"] == 1 && calls["flaky"] == 3 && calls["stale"] == 2
		mu.Unlock()
		if settled && r.Ready() {
			break
		}
		if time.Now().After(end) {
			t.Fatalf("calls %v ready %v; want a once, flaky 3 times, stale twice, and ready", calls, r.Ready())
		}
	}
	cancel()
	if err := <-done; err != nil || r.Ready() || !q.ShuttingDown() {
		t.Errorf("after stop: err %v ready %v queue shutting down %v", err, r.Ready(), q.ShuttingDown())
	}
}

// A sync that panics is recovered: the key is retried with backoff until it
// succeeds, the other keys are synced meanwhile, the process keeps running,
// and the runner counts the panic.
func TestPanickingSyncIsRecoveredAndRetried(t *testing.T) {
	var mu sync.Mutex
	calls := map[string]int{}
	succeeded := make(chan string, 10)
	q := NewQueue("test", time.Millisecond, 10*time.Millisecond)
	r := &Runner{Name: "Test", Workers: 1, Synced: []cache.InformerSynced{func() bool { return true }},
		Queues: []Queue{{Q: q, Sync: errorOnly(func(_ context.Context, key string) error {
			mu.Lock()
			calls[key]++
			first := calls[key] == 1
			mu.Unlock()
			if key == "a" && first {
				panic("boom on a")
			}
			succeeded <- key
			return nil
		})}}}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	for _, k := range []string{"a", "b", "c"} {
		q.Add(k)
	}
	got := map[string]bool{}
	timeout := time.After(10 * time.Second)
	for len(got) < 3 {
		select {
		case k := <-succeeded:
			got[k] = true
		case <-timeout:
			t.Fatalf("synced %v; want a (after its panic), b and c", got)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("runner stopped with %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if calls["a"] != 2 || calls["b"] != 1 || calls["c"] != 1 {
		t.Errorf("calls %v; want a twice (panic, then success), b and c once", calls)
	}
	if r.Panics() != 1 {
		t.Errorf("Panics() = %d, want 1", r.Panics())
	}
}

// A resync that panics is recovered too and counted.
func TestPanickingResyncIsRecovered(t *testing.T) {
	ran := make(chan struct{}, 2)
	r := &Runner{Name: "Test", Workers: 1, Synced: []cache.InformerSynced{func() bool { return true }},
		Queues: []Queue{{Q: NewQueue("test", time.Millisecond, time.Millisecond), Sync: errorOnly(func(context.Context, string) error { return nil })}},
		Resync: func(context.Context) { ran <- struct{}{}; panic("boom in resync") }, ResyncPeriod: time.Millisecond}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	for range 2 { // a second run proves the first panic did not end the resync loop
		select {
		case <-ran:
		case <-time.After(10 * time.Second):
			t.Fatal("resync did not run again after it panicked")
		}
	}
	cancel()
	<-done
	if r.Panics() < 2 {
		t.Errorf("Panics() = %d, want at least 2", r.Panics())
	}
}

// errorOnly is a sync that only ever returns an error (nil is Done).
func errorOnly(sync func(ctx context.Context, key string) error) func(context.Context, string) (Result, error) {
	return func(ctx context.Context, key string) (Result, error) { return Done(), sync(ctx, key) }
}
