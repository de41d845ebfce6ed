package provisioner

import (
	"strconv"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// newest keeps, per key, the newest copy of an object seen from the informer
// or returned by our own writes, so that a sync never decides from a copy
// older than one we wrote (informers lag behind writes).
type newest[T metav1.Object] struct {
	mu   sync.Mutex
	objs map[string]T
}

func newNewest[T metav1.Object]() *newest[T] { return &newest[T]{objs: map[string]T{}} }

// observe records obj unless the held copy of the same object is newer, and
// returns the newer of the two.
func (n *newest[T]) observe(key string, obj T) T {
	n.mu.Lock()
	defer n.mu.Unlock()
	if held, ok := n.objs[key]; ok && older(obj, held) {
		return held
	}
	n.objs[key] = obj
	return obj
}

// get returns the held copy.
func (n *newest[T]) get(key string) (T, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	obj, ok := n.objs[key]
	return obj, ok
}

func (n *newest[T]) forget(key string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.objs, key)
}

// older compares resourceVersions of one object numerically (etcd3 makes
// them increasing integers); anything unparsable counts as not older.
func older(a, b metav1.Object) bool {
	if a.GetUID() != b.GetUID() {
		return false
	}
	av, errA := strconv.ParseUint(a.GetResourceVersion(), 10, 64)
	bv, errB := strconv.ParseUint(b.GetResourceVersion(), 10, 64)
	return errA == nil && errB == nil && av < bv
}
