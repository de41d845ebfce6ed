package loop

import "sync"

// Unsettled is the set of keys whose object, as last seen by the event
// handlers, is not at rest: what a periodic resync revisits. The handlers
// keep it (Saw on every add and update, Gone on delete), so a resync costs
// the objects that still have work, not all of them: a List of every
// object each period, in each loop, grew with the cluster (100,000 claims
// at rest walked every 15 s for nothing).
//
// It holds only what an object's own fields say; a loop whose work also
// depends on other objects (a class or node created late) keeps its full
// resync. Safe for concurrent use.
type Unsettled struct {
	mu   sync.Mutex
	keys map[string]struct{}
}

// NewUnsettled returns an empty set.
func NewUnsettled() *Unsettled { return &Unsettled{keys: map[string]struct{}{}} }

// Saw records the object of key as last seen: at rest or not.
func (u *Unsettled) Saw(key string, atRest bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if atRest {
		delete(u.keys, key)
	} else {
		u.keys[key] = struct{}{}
	}
}

// Gone forgets a deleted object.
func (u *Unsettled) Gone(key string) { u.Saw(key, true) }

// Keys are the keys not at rest, in no order.
func (u *Unsettled) Keys() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := make([]string, 0, len(u.keys))
	for k := range u.keys {
		out = append(out, k)
	}
	return out
}
