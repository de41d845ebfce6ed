package binder

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/volplane/volplane/internal/binding"
	"github.com/volplane/volplane/internal/controller/loop"
)

// The waiting events (binding.Event.Repeats) that each kind of sync last
// recorded on each object are remembered in a loop.EventMemory, so that a
// situation that does not change is reported once, not on every resync
// (the reference repeats WaitForFirstConsumer / ExternalProvisioning every
// 15 s).
//
// A sync's waiting events are settled together, one slot per reason: two
// waiting events of one situation (ExternalProvisioning and NoVolumeFits)
// do not evict each other, and a reason the last sync no longer decided is
// forgotten, so a situation that comes back is reported again. Claim and
// volume syncs both record on claims: each kind has its own scope, or each
// would make the other's events news again.

// The scopes of the event memory: which kind of sync recorded an event.
const (
	fromClaimSync  = "claim sync"
	fromVolumeSync = "volume sync"
)

// dueEvents takes the events one sync decided on one object and returns
// those to record: every event that does not repeat, and each waiting event
// whose situation differs from the last one this kind of sync recorded
// under its reason. The sync's waiting events replace what was remembered.
func dueEvents(m *loop.EventMemory, uid types.UID, scope string, events []binding.Event) []binding.Event {
	var situations map[string]string // nil, as for none, on most syncs
	for _, e := range events {
		if !e.Repeats {
			continue
		}
		if situations == nil {
			situations = map[string]string{}
		}
		situations[e.Reason] = e.SituationKey()
	}
	news := m.Settle(uid, scope, situations)
	var out []binding.Event
	for _, e := range events {
		if !e.Repeats || news[e.Reason] {
			out = append(out, e)
		}
	}
	return out
}

// record emits the events one sync decided on the claim and the volume they
// belong to, minus the repeats. It must run for every sync that completed,
// with or without events: a sync without waiting events is what makes the
// next waiting state news.
func (c *Controller) record(scope string, events []binding.Event, claim *v1.PersistentVolumeClaim, pv *v1.PersistentVolume) {
	if claim != nil {
		c.emit(claim, dueEvents(c.events, claim.UID, scope, eventsOn(events, binding.OnClaim)))
	}
	if pv != nil {
		c.emit(pv, dueEvents(c.events, pv.UID, scope, eventsOn(events, binding.OnVolume)))
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
