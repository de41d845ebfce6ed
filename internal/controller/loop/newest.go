package loop

import (
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/internal/resourceversion"
)

// Newest remembers, per key, the newest copy of an object seen from the
// informer or returned by our own writes. Informers lag behind writes;
// without this a sync could act on (and write back) a copy older than the
// one it just wrote, which is how the reference ends up fighting itself
// with 409s.
type Newest[T metav1.Object] struct {
	mu   sync.Mutex
	objs map[string]T
	// own holds the resourceVersion of our last write per key: the informer
	// event of that version tells us nothing we do not know.
	own map[string]string
}

// NewNewest returns an empty Newest.
func NewNewest[T metav1.Object]() *Newest[T] {
	return &Newest[T]{objs: map[string]T{}, own: map[string]string{}}
}

// Wrote records what one of our writes returned and returns the newest copy.
func (n *Newest[T]) Wrote(key string, obj T) T {
	n.mu.Lock()
	defer n.mu.Unlock()
	if held, ok := n.objs[key]; ok && resourceversion.Older(obj, held) {
		obj = held
	} else {
		n.objs[key] = obj
	}
	n.own[key] = obj.GetResourceVersion()
	return obj
}

// IsOwnWrite says whether obj is exactly the version our last write made.
// The sync that wrote it already decided what follows, so its informer event
// needs no sync of its own.
func (n *Newest[T]) IsOwnWrite(key string, obj T) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	rv, ok := n.own[key]
	return ok && rv == obj.GetResourceVersion()
}

// Observe takes what the informer delivered and returns the newer of it and
// the held copy. Once the informer has caught up with a held copy, the copy
// is dropped: the lister holds the same version, so Newest only ever holds
// writes the informer has not delivered yet, not a second copy of every
// object (at 100,000 PVs and claims that was hundreds of MB).
func (n *Newest[T]) Observe(key string, obj T) T {
	n.mu.Lock()
	defer n.mu.Unlock()
	if held, ok := n.objs[key]; ok && resourceversion.Older(obj, held) {
		return held
	}
	delete(n.objs, key)
	return obj
}

// Newer returns the newer of obj and the held copy without recording obj.
// Reads use it: an informer copy adds nothing to what the lister holds, and
// recording it could bring back an object whose delete was just handled
// (the read raced with the delete handler's Forget).
func (n *Newest[T]) Newer(key string, obj T) T {
	n.mu.Lock()
	defer n.mu.Unlock()
	if held, ok := n.objs[key]; ok && resourceversion.Older(obj, held) {
		return held
	}
	return obj
}

// Get returns the held copy.
func (n *Newest[T]) Get(key string) (T, bool) {
	n.mu.Lock()
	defer n.mu.Unlock()
	obj, ok := n.objs[key]
	return obj, ok
}

// Forget drops the key when the object is deleted.
func (n *Newest[T]) Forget(key string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.objs, key)
	delete(n.own, key)
}
