package loop

import (
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
)

// WaitingQueue is a work queue that can tell whether a key waits in it: a
// resync asks before deciding a key again, which would only add it where it
// already is. At 100,000 claims arriving at once the provisioner's resync
// decided every queued claim each period for the many minutes they waited
// (O(backlog × resyncs), a tenth of its CPU).
//
// Waiting errs only toward false: a key added by a retry (AddRateLimited,
// AddAfter) is not marked, and one added again while a worker holds it may
// lose its mark when that worker's Get returns; a resync then decides it as
// before. It never answers true for a key no worker will take again.
type WaitingQueue struct {
	workqueue.TypedRateLimitingInterface[string]

	mu      sync.Mutex
	waiting map[string]struct{}
}

// NewWaitingQueue is NewQueue's queue that tracks its waiting keys.
func NewWaitingQueue(name string, base, max time.Duration) *WaitingQueue {
	return &WaitingQueue{TypedRateLimitingInterface: NewQueue(name, base, max), waiting: map[string]struct{}{}}
}

// Add queues key and marks it waiting (marked first, so a worker taking it
// at once clears the mark after).
func (q *WaitingQueue) Add(key string) {
	q.mu.Lock()
	q.waiting[key] = struct{}{}
	q.mu.Unlock()
	q.TypedRateLimitingInterface.Add(key)
}

// Get takes the next key; it no longer waits.
func (q *WaitingQueue) Get() (string, bool) {
	key, quit := q.TypedRateLimitingInterface.Get()
	q.mu.Lock()
	delete(q.waiting, key)
	q.mu.Unlock()
	return key, quit
}

// Waiting reports whether key was added and no worker has taken it since.
func (q *WaitingQueue) Waiting(key string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	_, ok := q.waiting[key]
	return ok
}
