package index

import (
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/volplane/volplane/internal/binding"
	"github.com/volplane/volplane/internal/resourceversion"
)

// Waiting holds the claims still looking for a volume (no volumeName,
// binding not completed), and which of them a free PV has woken. A free PV
// wakes one claim it fits, not all of them: with a thousand claims waiting,
// waking all for every new PV would be a thousand syncs per PV. A woken claim
// that did not take its PV hands it back (Release), and the PV wakes the
// next claim.
//
// Which claim a PV wakes: among the claims it fits, the one with the largest
// request the PV can hold, the oldest (first to arrive) among equal requests.
// Matching gives a claim the smallest PV that fits; this is the same best fit
// seen from the PV's side, so a big PV does not wake a small claim while a
// claim only it can serve waits. A claim one PV already woke (busy) is only
// chosen when no idle claim fits and the PV is new (Pending): the PV then
// waits for that claim's sync instead of being written Available just before
// a bind makes it Bound. Two wake-ups per claim at most: when every claim
// is busy, PVs handed back would otherwise pile up on the same claim and all
// come back at its sync, to pile up on the next one; that cascade made a
// bulk bind quadratic. A PV that wakes no claim needs none: every busy
// claim is queued and searches all free PVs itself.
//
// Why trees: when PVs are created in bulk, each PV event arrives while the
// claims woken before it are still busy, so a walk from the oldest claim
// passes k-1 busy claims for the k-th PV, quadratic overall. Claims are kept
// in partitions by the shape a PV must share with them (class, volume mode,
// attributes class, access modes: the shapes the index keeps free PVs by),
// and inside a partition in two btrees, idle and busy, ordered by request
// descending, then arrival. A wake looks at the partitions of the PV's class,
// volume mode and attributes class whose modes the PV offers (at most 16),
// seeks in each to the largest request not above the PV's capacity, and
// walks from there until fits accepts a claim. Cost: O(p log n), p those
// partitions, plus one fits call for each claim of the right shape and size
// that fits still rejects (a label selector the PV's labels miss, say): the
// walk is linear only in those.
//
// Not safe for concurrent use; the controller holds the mutex that guards
// its Index too.
type Waiting struct {
	byKey map[string]*waitingClaim
	// shapes: family → the partitions of that family by the access modes
	// their claims ask for.
	shapes map[family]map[binding.ModeSet]*partition
	// seq counts arrivals; a claim entering takes the next value.
	seq uint64
	// wokenFor: claim key → PVs that woke it and wait for its sync. It
	// outlives the claim's removal: the sync that removal queued releases
	// the PVs.
	wokenFor map[string][]string
	// woke: PV name → the claim it woke.
	woke map[string]string
}

// waitingClaim is one waiting claim and where it sits. A placed
// waitingClaim's order fields (shape, request, seq, slot) never change while
// it is in a tree; a claim that moves is taken out, changed, put back.
type waitingClaim struct {
	key     string
	claim   *v1.PersistentVolumeClaim
	shape   shape
	request resource.Quantity
	// seq is the arrival order: smaller came first.
	seq uint64
	// hopeless: the claim asks for an access mode Kubernetes does not know
	// or has a selector that does not parse, so binding.Check rejects every
	// PV for it. It is waiting (has, keys) but in no tree.
	hopeless bool
	// slot says which tree of its partition holds the claim, from how many
	// PVs woke it and wait for its sync.
	slot slot
}

// NewWaiting returns an empty Waiting.
func NewWaiting() *Waiting {
	return &Waiting{byKey: map[string]*waitingClaim{}, shapes: map[family]map[binding.ModeSet]*partition{},
		wokenFor: map[string][]string{}, woke: map[string]string{}}
}

// newWaitingClaim compiles what the trees sort a claim by; seq and busy are
// set when it is added.
func newWaitingClaim(key string, claim *v1.PersistentVolumeClaim) *waitingClaim {
	r := binding.NewRequest(claim)
	return &waitingClaim{
		key:      key,
		claim:    claim,
		shape:    shape{family: requestFamily(r), modes: r.Modes},
		request:  r.Size,
		hopeless: r.UnknownModes || r.SelectorErr != nil,
	}
}

// samePlace says whether two versions of a claim sort the same way.
func (wc *waitingClaim) samePlace(other *waitingClaim) bool {
	return wc.shape == other.shape && wc.hopeless == other.hopeless && wc.request.Cmp(other.request) == 0
}

// Update adds, refreshes or removes a claim after it changed. A claim that
// changed class queues behind the claims of its new class; any other change
// keeps its place in arrival order. An older copy than the one held is
// ignored.
func (w *Waiting) Update(claim *v1.PersistentVolumeClaim) {
	key := binding.ClaimKey(claim)
	old, ok := w.byKey[key]
	if ok && resourceversion.Older(claim, old.claim) {
		return // a write's answer handled after the informer delivered a later change
	}
	if !binding.IsWaiting(claim) {
		w.Remove(key)
		return
	}
	next := newWaitingClaim(key, claim)
	switch {
	case !ok:
		w.add(next)
	case old.shape.class != next.shape.class:
		w.Remove(key)
		w.add(next)
	case old.samePlace(next):
		old.claim = claim
	default: // a new request or shape: same arrival, new place
		w.unplace(old)
		next.seq, next.slot = old.seq, old.slot
		w.byKey[key] = next
		w.place(next)
	}
}

func (w *Waiting) add(wc *waitingClaim) {
	w.seq++
	wc.seq = w.seq
	wc.slot = slotFor(len(w.wokenFor[wc.key]))
	w.byKey[wc.key] = wc
	w.place(wc)
}

// Remove takes a claim out (deleted, or changing class); its wake-ups stay
// until its sync releases them.
func (w *Waiting) Remove(key string) {
	wc, ok := w.byKey[key]
	if !ok {
		return
	}
	delete(w.byKey, key)
	w.unplace(wc)
}

// Has says whether the claim is waiting.
func (w *Waiting) Has(key string) bool {
	_, ok := w.byKey[key]
	return ok
}

// Keys are the waiting claims, in no order.
func (w *Waiting) Keys() []string {
	keys := make([]string, 0, len(w.byKey))
	for k := range w.byKey {
		keys = append(keys, k)
	}
	return keys
}

// Wake finds the waiting claim pv should be offered to (see the type's
// comment for which) and marks it woken by pv. A PV that already woke a claim
// gets the same claim back until that claim's sync releases it.
//
// fits decides, with the claim's binding mode, whether the claim could take
// pv; it must say no whenever binding.Check does, as the search skips the
// claims Check would reject for class, volume mode, attributes class, access
// modes, size or pv's phase without asking it.
func (w *Waiting) Wake(pv *v1.PersistentVolume, fits func(*v1.PersistentVolumeClaim) bool) (string, bool) {
	if key, ok := w.woke[pv.Name]; ok {
		return key, true
	}
	wc := w.choose(pv, fits)
	if wc == nil {
		return "", false
	}
	w.mark(wc, pv.Name)
	return wc.key, true
}

// choose applies the selection rule without marking anything.
func (w *Waiting) choose(pv *v1.PersistentVolume, fits func(*v1.PersistentVolumeClaim) bool) *waitingClaim {
	if ref := pv.Spec.ClaimRef; ref != nil {
		return w.preBoundClaim(ref, fits)
	}
	// binding.Check takes a PV without a claimRef only while it is free and
	// not being deleted, for any claim: a Released PV offered before its
	// phase write need not walk the claims to learn that none fits.
	if pv.DeletionTimestamp != nil || !binding.FreePhase(pv.Status.Phase) {
		return nil
	}
	if wc := w.bestFit(pv, idleSlot, fits); wc != nil || !newVolume(pv) {
		return wc
	}
	return w.bestFit(pv, busySlot, fits)
}

// newVolume: a PV not yet written any phase, whose Available write a busy
// claim's bind may still make needless.
func newVolume(pv *v1.PersistentVolume) bool {
	return pv.Status.Phase == v1.VolumePending || pv.Status.Phase == ""
}

// preBoundClaim: a PV with a claimRef fits no claim but the one it names
// (binding.Check: pre-bound or bound to another), and fits that one whatever
// its class, so it is looked up by name rather than in the PV's class. Idle
// or busy, it is the only candidate.
func (w *Waiting) preBoundClaim(ref *v1.ObjectReference, fits func(*v1.PersistentVolumeClaim) bool) *waitingClaim {
	wc, ok := w.byKey[binding.ClaimRefKey(ref)]
	if !ok || wc.hopeless || !fits(wc.claim) {
		return nil
	}
	return wc
}

// bestFit returns the first claim in (request descending, arrival) order,
// among the idle or the busy claims of every partition pv could serve, that
// fits pv. Each partition is sought and walked on its own; the first fit of
// each is compared.
func (w *Waiting) bestFit(pv *v1.PersistentVolume, s slot, fits func(*v1.PersistentVolumeClaim) bool) *waitingClaim {
	capacity := binding.Capacity(pv)
	var best *waitingClaim
	w.eachPartition(pv, func(p *partition) {
		wc := firstFit(p.tree(s), capacity, fits)
		if wc != nil && (best == nil || claimLess(wc, best)) {
			best = wc
		}
	})
	return best
}

func (w *Waiting) mark(wc *waitingClaim, pvName string) {
	w.wokenFor[wc.key] = append(w.wokenFor[wc.key], pvName)
	w.woke[pvName] = wc.key
	w.settle(wc)
}

// Release ends the wake-ups of a claim whose sync ran and returns the PVs
// that woke it, so they can be offered to the next claim.
func (w *Waiting) Release(key string) []string {
	pvs := w.wokenFor[key]
	delete(w.wokenFor, key)
	for _, pv := range pvs {
		delete(w.woke, pv)
	}
	if wc, ok := w.byKey[key]; ok {
		w.settle(wc)
	}
	return pvs
}

// ForgetVolume drops a deleted PV's wake-up; a claim no other PV woke is
// idle again.
func (w *Waiting) ForgetVolume(pvName string) {
	key, ok := w.woke[pvName]
	if !ok {
		return
	}
	delete(w.woke, pvName)
	w.wokenFor[key] = slices.DeleteFunc(w.wokenFor[key], func(n string) bool { return n == pvName })
	if len(w.wokenFor[key]) == 0 {
		delete(w.wokenFor, key)
	}
	if wc, ok := w.byKey[key]; ok {
		w.settle(wc)
	}
}

// settle moves a claim to the slot its wake-ups say.
func (w *Waiting) settle(wc *waitingClaim) {
	s := slotFor(len(w.wokenFor[wc.key]))
	if wc.slot == s {
		return
	}
	w.unplace(wc)
	wc.slot = s
	w.place(wc)
}
