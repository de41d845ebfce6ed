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
		Queues: []Queue{{Q: q, Sync: func(_ context.Context, key string) error {
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
		}}}}
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
