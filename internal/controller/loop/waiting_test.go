package loop

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"
)

// TestWaitingIsAddedAndNotYetTaken: a key waits from its Add until a worker
// takes it; one added again while held waits again and is taken again; a
// retry's delayed add is not marked (Waiting errs toward false).
func TestWaitingIsAddedAndNotYetTaken(t *testing.T) {
	q := NewWaitingQueue("t", time.Millisecond, time.Millisecond)
	defer q.ShutDown()
	if q.Waiting("a") {
		t.Fatal("a waits before any Add")
	}
	q.Add("a")
	q.Add("a")
	if !q.Waiting("a") {
		t.Fatal("a added, not waiting")
	}
	k, _ := q.Get()
	if k != "a" || q.Waiting("a") {
		t.Fatalf("Get %q; a still waiting: %v", k, q.Waiting("a"))
	}
	q.Add("a") // while held: the queue gives it again after Done
	if !q.Waiting("a") {
		t.Fatal("a added while held, not waiting")
	}
	q.Done("a")
	if k, _ := q.Get(); k != "a" || q.Waiting("a") {
		t.Fatalf("second Get %q; a still waiting: %v", k, q.Waiting("a"))
	}
	q.Done("a")
	q.AddRateLimited("a")
	if q.Waiting("a") {
		t.Fatal("a retry's add is marked")
	}
	if k, _ := q.Get(); k != "a" {
		t.Fatalf("retried Get %q", k)
	}
	q.Done("a")
}

// TestWaitingNeverOutlivesTheKeyInTheQueue: with adds and workers racing, a
// key marked waiting is always taken again: once every worker is done and
// the queue is empty, nothing is marked.
func TestWaitingNeverOutlivesTheKeyInTheQueue(t *testing.T) {
	q := NewWaitingQueue("t", time.Millisecond, time.Millisecond)
	race(q, func(a, i int) { q.Add(fmt.Sprint((a + i) % 10)) }, func(string) {})
	for i := range 10 {
		if k := fmt.Sprint(i); q.Waiting(k) {
			t.Errorf("%s marked waiting with the queue drained", k)
		}
	}
}

// race runs 4 adders, each calling add(adder, i) 2,000 times, against 4
// workers telling took each key they take, then drains and shuts q down.
func race(q workqueue.TypedInterface[string], add func(adder, i int), took func(key string)) {
	var workers sync.WaitGroup
	for range 4 {
		workers.Go(func() {
			for {
				k, quit := q.Get()
				if quit {
					return
				}
				took(k)
				q.Done(k)
			}
		})
	}
	var adders sync.WaitGroup
	for a := range 4 {
		adders.Go(func() {
			for i := range 2000 {
				add(a, i)
			}
		})
	}
	adders.Wait()
	q.ShutDownWithDrain()
	workers.Wait()
}
