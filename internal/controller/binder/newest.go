package binder

import (
	"strconv"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// newest remembers, per key, the newest copy of an object seen from the
// informer or returned by our own writes. Informers lag behind writes; without
// this a sync could act on (and write back) a copy older than the one it just
// wrote, which is how the reference ends up fighting itself with 409s.
type newest[T metav1.Object] struct {
	mu   sync.Mutex
	objs map[string]T
	// own holds the resourceVersion of our last write per key: the informer
	// event of that version tells us nothing we do not know.
	own map[string]string
}

func newNewest[T metav1.Object]() *newest[T] {
	return &newest[T]{objs: map[string]T{}, own: map[string]string{}}
}

// wrote records what one of our writes returned.
func (n *newest[T]) wrote(key string, obj T) T {
	obj = n.observe(key, obj)
	n.mu.Lock()
	n.own[key] = obj.GetResourceVersion()
	n.mu.Unlock()
	return obj
}

// isOwnWrite says whether obj is exactly the version our last write made.
// The sync that wrote it already decided what follows, so its informer event
// needs no sync of its own: skipping those halves the syncs per bind.
func (n *newest[T]) isOwnWrite(key string, obj T) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	rv, ok := n.own[key]
	return ok && rv == obj.GetResourceVersion()
}

// observe records obj if it is at least as new as what is held and returns
// the newer of the two.
func (n *newest[T]) observe(key string, obj T) T {
	n.mu.Lock()
	defer n.mu.Unlock()
	held, ok := n.objs[key]
	if ok && olderThan(obj, held) {
		return held
	}
	n.objs[key] = obj
	return obj
}

// forget drops the key when the object is deleted.
func (n *newest[T]) forget(key string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.objs, key)
	delete(n.own, key)
}

// olderThan compares resourceVersions numerically. The API server documents
// them as opaque, but etcd3 storage makes them increasing integers, and the
// reference controller relies on the same; an unparsable version counts as
// newer so that we never pin a stale copy.
func olderThan(a, b metav1.Object) bool {
	if a.GetUID() != b.GetUID() {
		return false // a re-created object replaces the old one
	}
	av, errA := strconv.ParseUint(a.GetResourceVersion(), 10, 64)
	bv, errB := strconv.ParseUint(b.GetResourceVersion(), 10, 64)
	if errA != nil || errB != nil {
		return false
	}
	return av < bv
}
