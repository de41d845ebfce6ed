package binder

import (
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/volplane/volplane/internal/binding"
)

// eventMemory remembers the last waiting event recorded per object so a
// state that does not change is reported once, not on every resync (the
// reference repeats WaitForFirstConsumer / ExternalProvisioning every 15 s).
type eventMemory struct {
	mu   sync.Mutex
	last map[types.UID]string
}

func newEventMemory() *eventMemory { return &eventMemory{last: map[types.UID]string{}} }

// due says whether e should be recorded on the object uid now, and remembers
// it. A non-repeating event always records and resets the memory, so that a
// later return to a waiting state is reported again.
func (m *eventMemory) due(uid types.UID, e binding.Event) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !e.Repeats {
		delete(m.last, uid)
		return true
	}
	id := e.Type + "/" + e.Reason + "/" + e.Message
	if m.last[uid] == id {
		return false
	}
	m.last[uid] = id
	return true
}

// settled forgets the waiting event of an object whose state moved on.
func (m *eventMemory) settled(uid types.UID) { m.forget(uid) }

func (m *eventMemory) forget(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.last, uid)
}

// record emits the decision's events on the claim or the volume they belong to.
func (c *Controller) record(events []binding.Event, claim *v1.PersistentVolumeClaim, pv *v1.PersistentVolume) {
	for _, e := range events {
		var obj runtime.Object
		var uid types.UID
		switch {
		case e.On == binding.OnVolume && pv != nil:
			obj, uid = pv, pv.UID
		case e.On == binding.OnClaim && claim != nil:
			obj, uid = claim, claim.UID
		default:
			continue
		}
		if c.events.due(uid, e) {
			c.recorder.Event(obj, e.Type, e.Reason, e.Message)
		}
	}
}
