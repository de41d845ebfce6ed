package binder

import (
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/volplane/volplane/internal/binding"
)

// eventMemory remembers the waiting events (binding.Event.Repeats) that each
// kind of sync last recorded on each object, so that a situation that does
// not change is reported once, not on every resync (the reference repeats
// WaitForFirstConsumer / ExternalProvisioning every 15 s).
//
// A sync's waiting events are remembered together, by reason: two waiting
// events of one situation (ExternalProvisioning and NoVolumeFits) do not
// evict each other, and a reason the last sync no longer decided is
// forgotten, so a situation that comes back is reported again. Claim and
// volume syncs both record on claims: each kind has its own memory, or
// each would make the other's events news again.
//
// Memory is bounded by the objects in a waiting state: a sync without
// waiting events drops its entry and a deleted object is forgotten.
type eventMemory struct {
	mu   sync.Mutex
	last map[memoryKey]map[string]string // reason → SituationKey
}

type memoryKey struct {
	uid  types.UID
	from syncKind
}

// syncKind says which sync recorded an event.
type syncKind int

const (
	fromClaimSync syncKind = iota
	fromVolumeSync
)

func newEventMemory() *eventMemory { return &eventMemory{last: map[memoryKey]map[string]string{}} }

// due takes the events one sync decided on one object and returns those to
// record: every event that does not repeat, and each waiting event whose
// situation differs from the last one this kind of sync recorded under its
// reason. The sync's waiting events replace what was remembered.
func (m *eventMemory) due(uid types.UID, from syncKind, events []binding.Event) []binding.Event {
	key := memoryKey{uid, from}
	m.mu.Lock()
	defer m.mu.Unlock()
	before := m.last[key]
	var now map[string]string
	var out []binding.Event
	for _, e := range events {
		if !e.Repeats {
			out = append(out, e)
			continue
		}
		if now == nil {
			now = map[string]string{}
		}
		id := e.SituationKey()
		now[e.Reason] = id
		if prev, ok := before[e.Reason]; !ok || prev != id {
			out = append(out, e)
		}
	}
	if now == nil {
		delete(m.last, key)
	} else {
		m.last[key] = now
	}
	return out
}

// forget drops everything remembered about a deleted object.
func (m *eventMemory) forget(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.last, memoryKey{uid, fromClaimSync})
	delete(m.last, memoryKey{uid, fromVolumeSync})
}

// record emits the events one sync decided on the claim and the volume they
// belong to, minus the repeats. It must run for every sync that completed,
// with or without events: a sync without waiting events is what makes the
// next waiting state news.
func (c *Controller) record(from syncKind, events []binding.Event, claim *v1.PersistentVolumeClaim, pv *v1.PersistentVolume) {
	if claim != nil {
		c.emit(claim, c.events.due(claim.UID, from, eventsOn(events, binding.OnClaim)))
	}
	if pv != nil {
		c.emit(pv, c.events.due(pv.UID, from, eventsOn(events, binding.OnVolume)))
	}
}

func (c *Controller) emit(obj runtime.Object, events []binding.Event) {
	for _, e := range events {
		c.recorder.Event(obj, e.Type, e.Reason, e.Message)
	}
}

func eventsOn(events []binding.Event, target binding.Target) []binding.Event {
	var out []binding.Event
	for _, e := range events {
		if e.On == target {
			out = append(out, e)
		}
	}
	return out
}
