package keyedmutex

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"
)

func TestLockGivesUpWithTheContext(t *testing.T) {
	k := New()
	unlock, err := k.Lock(context.Background(), "b", "a", "a", "")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err = k.Lock(ctx, "c", "a")
	var pending *PendingError
	if !errors.As(err, &pending) || pending.Key != "a" || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("lock of a held key: %v, want a PendingError for a", err)
	}

	// "c" was released when the call gave up, and "a" frees on unlock.
	unlockC, err := k.Lock(context.Background(), "c")
	if err != nil {
		t.Fatal(err)
	}
	unlockC()
	unlock()
	unlockA, err := k.Lock(context.Background(), "a", "b")
	if err != nil {
		t.Fatal(err)
	}
	unlockA()
	if k.Len() != 0 {
		t.Errorf("keys left behind: %v", k.sems)
	}
}

// One key is held by one caller at a time; the count it guards is never
// raced, and nothing is left once every caller is done.
func TestOneKeyOneHolder(t *testing.T) {
	k := New()
	var wg sync.WaitGroup
	counts := map[string]*int{"x": new(int), "y": new(int)} // read only: each key's count is its own
	for i := range 50 {
		key := []string{"x", "y"}[i%2]
		wg.Go(func() {
			unlock, err := k.Lock(context.Background(), key)
			if err != nil {
				t.Error(err)
				return
			}
			*counts[key]++
			unlock()
		})
	}
	wg.Wait()
	if *counts["x"] != 25 || *counts["y"] != 25 || k.Len() != 0 {
		t.Errorf("counts %d and %d, %d keys left", *counts["x"], *counts["y"], k.Len())
	}
}
