package hostpath

import (
	"context"
	"slices"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// keyedMutex serializes the calls that touch one volume or snapshot while
// calls on different ones run in parallel. A call that needs several keys
// (a clone: the new volume and its source) takes them in sorted order, so two
// such calls can never deadlock.
type keyedMutex struct {
	mu   sync.Mutex
	sems map[string]*keySem
}

// keySem is a one-slot semaphore: a channel, so waiting can give up when the
// caller's context ends.
type keySem struct {
	slot chan struct{}
	refs int
}

func newKeyedMutex() *keyedMutex {
	return &keyedMutex{sems: map[string]*keySem{}}
}

// lock takes every non-empty key or none. If ctx ends first, the call fails
// with Aborted, which the CSI spec reserves for "an operation is pending for
// this volume".
func (k *keyedMutex) lock(ctx context.Context, keys ...string) (unlock func(), err error) {
	keys = slices.Compact(slices.Sorted(slices.Values(keys)))
	keys = slices.DeleteFunc(keys, func(key string) bool { return key == "" })
	var held []string
	unlock = func() {
		for _, key := range held {
			k.release(key)
		}
	}
	for _, key := range keys {
		sem := k.ref(key)
		select {
		case sem.slot <- struct{}{}:
			held = append(held, key)
		case <-ctx.Done():
			k.unref(key)
			unlock()
			return nil, status.Errorf(codes.Aborted, "an operation is pending for %s: %v", key, ctx.Err())
		}
	}
	return unlock, nil
}

func (k *keyedMutex) ref(key string) *keySem {
	k.mu.Lock()
	defer k.mu.Unlock()
	sem, ok := k.sems[key]
	if !ok {
		sem = &keySem{slot: make(chan struct{}, 1)}
		k.sems[key] = sem
	}
	sem.refs++
	return sem
}

func (k *keyedMutex) unref(key string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	sem := k.sems[key]
	sem.refs--
	if sem.refs == 0 {
		delete(k.sems, key)
	}
}

func (k *keyedMutex) release(key string) {
	k.mu.Lock()
	sem := k.sems[key]
	k.mu.Unlock()
	<-sem.slot
	k.unref(key)
}

// lockedVolume locks the volume id and returns it with the unlock to call,
// or NotFound (and nothing locked) when the driver has no such volume.
func (d *Driver) lockedVolume(ctx context.Context, id string) (*volume, func(), error) {
	unlock, err := d.locks.lock(ctx, id)
	if err != nil {
		return nil, nil, err
	}
	vol := d.store.current().Volumes[id]
	if vol == nil {
		unlock()
		return nil, nil, status.Errorf(codes.NotFound, "volume %q does not exist", id)
	}
	return vol, unlock, nil
}
