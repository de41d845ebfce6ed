package provisioner

import (
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// eventMemory remembers the last message recorded per object and reason,
// so that retries failing the same way record one event, not one per retry
// (the queue backs off, but a user reading events wants one line per
// change). Provisioning is thus reported once per claim, ProvisioningFailed
// once per distinct error.
type eventMemory struct {
	mu   sync.Mutex
	last map[types.UID]map[string]string
}

func newEventMemory() *eventMemory { return &eventMemory{last: map[types.UID]map[string]string{}} }

func (m *eventMemory) due(uid types.UID, reason, msg string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	byReason := m.last[uid]
	if byReason == nil {
		byReason = map[string]string{}
		m.last[uid] = byReason
	}
	if prev, ok := byReason[reason]; ok && prev == msg {
		return false
	}
	byReason[reason] = msg
	return true
}

func (m *eventMemory) forget(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.last, uid)
}

// event records on obj through the driver's recorder unless it repeats the
// last event recorded on obj with the same reason.
func (c *Controller) event(obj runtime.Object, uid types.UID, driver, eventType, reason, format string, args ...any) {
	c.eventIn(reason, obj, uid, driver, eventType, reason, format, args...)
}

// eventIn is event remembered under slot rather than the reason: for a
// second message that follows another of the same reason every time (the
// populator note after the Provisioning one), which would otherwise never
// repeat the last message of its reason and be recorded again each sync.
func (c *Controller) eventIn(slot string, obj runtime.Object, uid types.UID, driver, eventType, reason, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	r := c.recorders[driver]
	if r == nil || !c.events.due(uid, slot, eventType+"/"+msg) {
		return
	}
	r.Event(obj, eventType, reason, msg)
}
