package loop

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"
)

// takeAll takes n keys in order, marking each done.
func takeAll(t *testing.T, q *FollowUpQueue, n int) []string {
	t.Helper()
	var got []string
	for range n {
		k, quit := q.Get()
		if quit {
			t.Fatal("queue shut down")
		}
		got = append(got, k)
		q.Done(k)
	}
	return got
}

// TestFollowUpsGoFirst: a followed-up key is taken before every plainly
// added one, in the order followed up; one already waiting keeps its place;
// one followed up while a worker holds it comes back first.
func TestFollowUpsGoFirst(t *testing.T) {
	q := NewFollowUpQueue("t", time.Millisecond, time.Millisecond)
	defer q.ShutDown()
	for _, k := range []string{"a", "b", "c"} {
		q.Add(k)
	}
	q.FollowUp("x")
	q.FollowUp("y")
	q.FollowUp("b") // already waiting: stays where it is, and only once
	if got, want := takeAll(t, q, 5), []string{"x", "y", "a", "b", "c"}; !slices.Equal(got, want) {
		t.Fatalf("order %v, want %v", got, want)
	}
	if n := q.Len(); n != 0 {
		t.Fatalf("%d keys left, want 0", n)
	}

	q.Add("a")
	q.Add("b")
	k, _ := q.Get() // a held by a worker
	q.FollowUp(k)
	q.Add("c")
	q.Done(k)
	if got, want := takeAll(t, q, 3), []string{"a", "b", "c"}; !slices.Equal(got, want) {
		t.Fatalf("after a follow-up while held: %v, want %v", got, want)
	}
}

// TestFollowUpQueueLosesNoKey: racing adders, followers-up and workers;
// every key added is taken, and the lanes hold nothing after.
func TestFollowUpQueueLosesNoKey(t *testing.T) {
	q := NewFollowUpQueue("t", time.Millisecond, time.Millisecond)
	var mu sync.Mutex
	seen := map[string]bool{}
	race(q, func(a, i int) {
		if k := fmt.Sprint(i % 500); (i+a)%3 == 0 {
			q.FollowUp(k)
		} else {
			q.Add(k)
		}
	}, func(k string) {
		mu.Lock()
		seen[k] = true
		mu.Unlock()
	})
	if len(seen) != 500 {
		t.Fatalf("%d distinct keys taken, want 500", len(seen))
	}
	if l := q.lanes.Len(); l != 0 {
		t.Fatalf("%d keys left in the lanes", l)
	}
}
