package binder

import "sync"

// keyedMutex serializes work on one key (a PV name) across workers while
// letting different keys proceed in parallel. Entries are reference counted
// so the map holds only keys in use.
type keyedMutex struct {
	mu    sync.Mutex
	locks map[string]*keyedEntry
}

type keyedEntry struct {
	sync.Mutex
	users int
}

func newKeyedMutex() *keyedMutex { return &keyedMutex{locks: map[string]*keyedEntry{}} }

// lock blocks until key is free and returns the matching unlock.
func (k *keyedMutex) lock(key string) (unlock func()) {
	k.mu.Lock()
	e, ok := k.locks[key]
	if !ok {
		e = &keyedEntry{}
		k.locks[key] = e
	}
	e.users++
	k.mu.Unlock()
	e.Lock()
	return func() {
		e.Unlock()
		k.mu.Lock()
		e.users--
		if e.users == 0 {
			delete(k.locks, key)
		}
		k.mu.Unlock()
	}
}
