package loop

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// EventMemory remembers, per object, scope and slot, the situation a loop
// last reported in an event, so that a situation that does not change is
// reported once, not on every retry or resync (the reference repeats its
// waiting events every 15 s). A slot is usually the event's reason; a scope
// separates the kinds of sync that record on one object, so they do not
// make each other's events news again.
//
// Memory is bounded by the objects with something to report: Settle drops
// a scope left empty, and a deleted object is forgotten.
type EventMemory struct {
	mu   sync.Mutex
	last map[types.UID]map[string]map[string]string // uid → scope → slot → situation
}

// NewEventMemory returns an empty EventMemory.
func NewEventMemory() *EventMemory {
	return &EventMemory{last: map[types.UID]map[string]map[string]string{}}
}

// Due remembers situation under slot and says whether it differs from the
// one remembered there: the event is news.
func (m *EventMemory) Due(uid types.UID, scope, slot, situation string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	slots := m.slots(uid, scope)
	if prev, ok := slots[slot]; ok && prev == situation {
		return false
	}
	slots[slot] = situation
	return true
}

// Settle replaces what the scope remembers with situations (slot →
// situation), the whole set one sync decided, and returns the slots whose
// situation is news (nil: none). A slot the sync no longer decided is
// forgotten, so a situation that comes back is news again. Settle keeps
// situations as it is: the caller hands it over and does not change it.
func (m *EventMemory) Settle(uid types.UID, scope string, situations map[string]string) map[string]bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	before := m.last[uid][scope]
	var news map[string]bool
	for slot, situation := range situations {
		if prev, ok := before[slot]; !ok || prev != situation {
			if news == nil {
				news = map[string]bool{}
			}
			news[slot] = true
		}
	}
	switch {
	case len(situations) > 0:
		m.scopes(uid)[scope] = situations
	case before != nil:
		delete(m.last[uid], scope)
		if len(m.last[uid]) == 0 {
			delete(m.last, uid)
		}
	}
	return news
}

// Forget drops everything remembered about a deleted object.
func (m *EventMemory) Forget(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.last, uid)
}

// Len is how many objects are remembered.
func (m *EventMemory) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.last)
}

func (m *EventMemory) scopes(uid types.UID) map[string]map[string]string {
	scopes := m.last[uid]
	if scopes == nil {
		scopes = map[string]map[string]string{}
		m.last[uid] = scopes
	}
	return scopes
}

func (m *EventMemory) slots(uid types.UID, scope string) map[string]string {
	scopes := m.scopes(uid)
	slots := scopes[scope]
	if slots == nil {
		slots = map[string]string{}
		scopes[scope] = slots
	}
	return slots
}
