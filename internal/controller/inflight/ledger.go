// Package inflight is the one home of capacity accounting that the
// provisioner and the capacity loop share in a process: the bytes of the
// volumes being provisioned on each topology segment, and the driver's
// last GetCapacity answer for each class and segment.
//
// Nouns: Ledger (the accounting), Want (a volume about to be asked for),
// flight (one volume in the ledger: reserved before its CreateVolume, made
// once the driver answered with a volume, gone once the capacity loop asked
// the driver again after that, so that the answer counts it).
//
// The provisioner calls Reserve before it sends CreateVolume (with a check
// for a claim on a selected node: no room, no call), Settle once the driver
// answered, Release on a path that never sent it, and Changed after a
// DeleteVolume. The capacity loop asks a segment only when it is not Busy,
// calls Asking before GetCapacity and Answered after it, reads Snapshot,
// and is told of every change through Subscribe.
package inflight

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"

	"github.com/volplane/volplane/internal/capacity"
)

// Want is a volume about to be asked for: its driver, class, the segment of
// the endpoint asked, and its size.
type Want struct {
	Driver, Class string
	Segment       capacity.Segment
	Bytes         int64
}

type state int

const (
	reserved state = iota // CreateVolume not answered yet
	made                  // a volume may exist; counted until an answer asked after it
)

type flight struct {
	driver, segment string
	bytes           int64
	state           state
	doneSeq         uint64
}

type knownKey struct{ driver, class, segment string }

type known struct {
	answer capacity.Answer
	// askSeq is the ledger's sequence when the question was asked: a
	// volume made before it is in the answer.
	askSeq uint64
}

// Listener is told of a change on a driver's segment; refresh says the
// driver's answers for it are stale (a volume was made or deleted there).
type Listener func(driver, segment string, refresh bool)

// Ledger is the accounting. The zero value is not usable: call New.
type Ledger struct {
	mu        sync.Mutex
	seq       uint64
	flights   map[types.UID]*flight
	known     map[knownKey]known
	listeners []Listener
}

// New is an empty ledger.
func New() *Ledger {
	return &Ledger{flights: map[types.UID]*flight{}, known: map[knownKey]known{}}
}

// Subscribe adds a listener; listeners are called outside the ledger's lock.
func (l *Ledger) Subscribe(f Listener) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.listeners = append(l.listeners, f)
}

func (l *Ledger) notify(driver, segment string, refresh bool) {
	l.mu.Lock()
	ls := append([]Listener(nil), l.listeners...)
	l.mu.Unlock()
	for _, f := range ls {
		f(driver, segment, refresh)
	}
}

// Reserve counts w for the claim uid (replacing what it counted before) and
// returns whether it fits by the last answer known for its class and
// segment, less the other volumes in flight there. With check, a volume
// that does not fit is not counted (capacity.NoRoom).
func (l *Ledger) Reserve(uid types.UID, w Want, check bool) capacity.Verdict {
	seg := w.Segment.Key()
	l.mu.Lock()
	k, ok := l.known[knownKey{w.Driver, w.Class, seg}]
	v := capacity.Check(k.answer, ok, l.inFlightLocked(w.Driver, seg, k.askSeq, uid), w.Bytes)
	if check && v.Fit == capacity.NoRoom {
		l.mu.Unlock()
		return v
	}
	l.flights[uid] = &flight{driver: w.Driver, segment: seg, bytes: w.Bytes}
	l.mu.Unlock()
	l.notify(w.Driver, seg, false)
	return v
}

// Settle says the driver answered the claim's CreateVolume: made says a
// volume may exist (it is counted until the capacity loop asks the driver
// again); otherwise it is forgotten.
func (l *Ledger) Settle(uid types.UID, madeVolume bool) {
	l.mu.Lock()
	f := l.flights[uid]
	if f == nil {
		l.mu.Unlock()
		return
	}
	if madeVolume && l.answeredLocked(f.driver, f.segment) {
		l.seq++
		f.state, f.doneSeq = made, l.seq
	} else {
		delete(l.flights, uid)
	}
	l.mu.Unlock()
	l.notify(f.driver, f.segment, madeVolume)
}

// Release forgets a reservation whose CreateVolume was never answered (a
// path that stopped before sending it); a settled volume stays counted.
func (l *Ledger) Release(uid types.UID) {
	l.mu.Lock()
	f := l.flights[uid]
	if f == nil || f.state != reserved {
		l.mu.Unlock()
		return
	}
	delete(l.flights, uid)
	l.mu.Unlock()
	l.notify(f.driver, f.segment, false)
}

// Changed says a volume went away from a driver's segment (DeleteVolume):
// its answers there are stale.
func (l *Ledger) Changed(driver string, segment capacity.Segment) {
	l.notify(driver, segment.Key(), true)
}

// Busy says whether a CreateVolume is out on a driver's segment. An answer
// asked then may or may not count that volume (a driver that reserves
// while it creates, as the bundled one does, counts it; another not), so
// the capacity loop asks once the segment is quiet, and publishes the
// last answer less what is in flight meanwhile.
func (l *Ledger) Busy(driver string, segment capacity.Segment) bool {
	seg := segment.Key()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, f := range l.flights {
		if f.driver == driver && f.segment == seg && f.state == reserved {
			return true
		}
	}
	return false
}

// Asking is the sequence to pass to Answered for a GetCapacity sent now.
func (l *Ledger) Asking() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.seq
}

// Answered records the driver's answer for a class on a segment, asked at
// askSeq (Asking), and forgets the made volumes every answer known for the
// segment now counts.
func (l *Ledger) Answered(driver, class string, segment capacity.Segment, a capacity.Answer, askSeq uint64) {
	seg := segment.Key()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.known[knownKey{driver, class, seg}] = known{answer: a, askSeq: askSeq}
	oldest := askSeq
	for k, kn := range l.known {
		if k.driver == driver && k.segment == seg {
			oldest = min(oldest, kn.askSeq)
		}
	}
	for uid, f := range l.flights {
		if f.driver == driver && f.segment == seg && f.state == made && f.doneSeq <= oldest {
			delete(l.flights, uid)
		}
	}
}

// Prune forgets the answers of driver for items not in keep (classes or
// segments gone).
func (l *Ledger) Prune(driver string, keep []capacity.Item) {
	want := map[knownKey]bool{}
	for _, it := range keep {
		want[knownKey{driver, it.Class, it.Segment.Key()}] = true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for k := range l.known {
		if k.driver == driver && !want[k] {
			delete(l.known, k)
		}
	}
}

// Forget drops the answers of driver for these classes on a segment (by
// its Key) that went away: it is asked again if it comes back.
func (l *Ledger) Forget(driver, segment string, classes []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range classes {
		delete(l.known, knownKey{driver, c, segment})
	}
}

// Snapshot is what the capacity loop publishes from, by capacity.Item.Key:
// the answers known for driver's items and the bytes in flight that each
// answer does not count yet.
func (l *Ledger) Snapshot(driver string, items []capacity.Item) (answers map[string]capacity.Answer, inFlight map[string]int64) {
	answers, inFlight = map[string]capacity.Answer{}, map[string]int64{}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, it := range items {
		seg := it.Segment.Key()
		k, ok := l.known[knownKey{driver, it.Class, seg}]
		if !ok {
			continue
		}
		answers[it.Key()] = k.answer
		if n := l.inFlightLocked(driver, seg, k.askSeq, ""); n > 0 {
			inFlight[it.Key()] = n
		}
	}
	return answers, inFlight
}

// inFlightLocked sums the bytes on a segment an answer asked at askSeq
// does not count: reserved ones, and ones made after it was asked; the
// claim except is left out (its own earlier reservation).
func (l *Ledger) inFlightLocked(driver, seg string, askSeq uint64, except types.UID) int64 {
	var n int64
	for uid, f := range l.flights {
		if uid == except || f.driver != driver || f.segment != seg {
			continue
		}
		if f.state == reserved || f.doneSeq > askSeq {
			n += f.bytes
		}
	}
	return n
}

// answeredLocked says whether any answer is known for the segment: without
// one nobody subtracts a made volume, so it is not kept.
func (l *Ledger) answeredLocked(driver, seg string) bool {
	for k := range l.known {
		if k.driver == driver && k.segment == seg {
			return true
		}
	}
	return false
}
