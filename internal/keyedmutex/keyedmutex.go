package keyedmutex

import (
	"context"
	"fmt"
	"slices"
	"sync"
)

// Mutex locks keys. A call that needs several keys takes them in sorted
// order, so two such calls can never deadlock. The zero value is not
// usable; build one with New.
type Mutex struct {
	mu   sync.Mutex
	sems map[string]*sem
}

// sem is a one-slot semaphore: a channel, so waiting can give up when the
// caller's context ends.
type sem struct {
	slot chan struct{}
	refs int
}

// New returns a Mutex holding no key.
func New() *Mutex { return &Mutex{sems: map[string]*sem{}} }

// PendingError says which key was still held when the context ended.
type PendingError struct {
	Key string
	Err error // the context's error
}

func (e *PendingError) Error() string {
	return fmt.Sprintf("an operation is pending for %s: %v", e.Key, e.Err)
}

func (e *PendingError) Unwrap() error { return e.Err }

// Lock takes every non-empty key or none, and returns the unlock to call
// once. If ctx ends first, it fails with a *PendingError and holds nothing.
func (k *Mutex) Lock(ctx context.Context, keys ...string) (unlock func(), err error) {
	keys = slices.Compact(slices.Sorted(slices.Values(keys)))
	keys = slices.DeleteFunc(keys, func(key string) bool { return key == "" })
	var held []string
	unlock = func() {
		for _, key := range held {
			k.release(key)
		}
	}
	for _, key := range keys {
		s := k.ref(key)
		select {
		case s.slot <- struct{}{}:
			held = append(held, key)
		case <-ctx.Done():
			k.unref(key)
			unlock()
			return nil, &PendingError{Key: key, Err: ctx.Err()}
		}
	}
	return unlock, nil
}

// Len is how many keys are held or waited for.
func (k *Mutex) Len() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.sems)
}

func (k *Mutex) ref(key string) *sem {
	k.mu.Lock()
	defer k.mu.Unlock()
	s, ok := k.sems[key]
	if !ok {
		s = &sem{slot: make(chan struct{}, 1)}
		k.sems[key] = s
	}
	s.refs++
	return s
}

func (k *Mutex) unref(key string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	s := k.sems[key]
	s.refs--
	if s.refs == 0 {
		delete(k.sems, key)
	}
}

func (k *Mutex) release(key string) {
	k.mu.Lock()
	s := k.sems[key]
	k.mu.Unlock()
	<-s.slot
	k.unref(key)
}
