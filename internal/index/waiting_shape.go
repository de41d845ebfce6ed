package index

import (
	"github.com/google/btree"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/volplane/volplane/internal/binding"
)

// A claim's partition is its shape: its family and the access modes it asks
// for. A PV serves the partitions of its family whose modes it offers
// (binding.Check: the PV's modes include the claim's), the way the index
// keeps free PVs by the modes they offer. Partitions are grouped by family
// rather than by class alone so that a class used with many attributes
// classes does not make every wake look at all of them.

// slot is where a placed claim sits, by how many PVs woke it: idle (none),
// busy (one: a new PV may still wait on it) or full (two or more: in no
// tree, no PV waits on it any more).
type slot uint8

const (
	idleSlot slot = iota
	busySlot
	fullSlot
)

func slotFor(wakers int) slot {
	return slot(min(wakers, int(fullSlot)))
}

// partition holds the placed claims of one shape, idle and busy apart so
// that a wake never walks past the busy ones to reach an idle one.
type partition struct {
	idle, busy *btree.BTreeG[*waitingClaim]
}

// waitingDegree as the index's btreeDegree: wide nodes, few pointer hops.
const waitingDegree = 32

func newPartition() *partition {
	return &partition{idle: btree.NewG(waitingDegree, claimLess), busy: btree.NewG(waitingDegree, claimLess)}
}

// tree is the slot's tree, nil for full.
func (p *partition) tree(s slot) *btree.BTreeG[*waitingClaim] {
	switch s {
	case idleSlot:
		return p.idle
	case busySlot:
		return p.busy
	}
	return nil
}

func (p *partition) empty() bool { return p.idle.Len() == 0 && p.busy.Len() == 0 }

// claimLess orders a partition's trees: the largest request first, then
// the oldest. Sequences are unique, so no two claims compare equal.
func claimLess(a, b *waitingClaim) bool {
	if c := a.request.Cmp(b.request); c != 0 {
		return c > 0
	}
	return a.seq < b.seq
}

// place puts a claim into the tree its shape and slot say.
func (w *Waiting) place(wc *waitingClaim) {
	if wc.hopeless || wc.slot == fullSlot {
		return
	}
	parts, ok := w.shapes[wc.shape.family]
	if !ok {
		parts = map[binding.ModeSet]*partition{}
		w.shapes[wc.shape.family] = parts
	}
	p, ok := parts[wc.shape.modes]
	if !ok {
		p = newPartition()
		parts[wc.shape.modes] = p
	}
	p.tree(wc.slot).ReplaceOrInsert(wc)
}

// unplace takes a claim out of its tree and drops what became empty, so
// that shapes no claim has any more cost nothing to a wake.
func (w *Waiting) unplace(wc *waitingClaim) {
	if wc.hopeless || wc.slot == fullSlot {
		return
	}
	parts := w.shapes[wc.shape.family]
	p, ok := parts[wc.shape.modes]
	if !ok {
		return
	}
	p.tree(wc.slot).Delete(wc)
	if !p.empty() {
		return
	}
	delete(parts, wc.shape.modes)
	if len(parts) == 0 {
		delete(w.shapes, wc.shape.family)
	}
}

// eachPartition calls f with every partition whose claims pv could serve
// by shape.
func (w *Waiting) eachPartition(pv *v1.PersistentVolume, f func(*partition)) {
	parts := w.shapes[volumeFamily(pv)]
	offered, _ := binding.ModesOf(pv.Spec.AccessModes)
	for modes, p := range parts {
		if offered.Includes(modes) {
			f(p)
		}
	}
}

// firstFit seeks the first claim whose request the capacity holds and walks
// on until fits accepts one: the seek skips the claims too big for the PV,
// the walk only those fits rejects for other reasons.
func firstFit(t *btree.BTreeG[*waitingClaim], capacity resource.Quantity, fits func(*v1.PersistentVolumeClaim) bool) *waitingClaim {
	var found *waitingClaim
	// seq 0 is before every claim's: the pivot sorts first among the claims
	// requesting exactly the capacity.
	pivot := &waitingClaim{request: capacity}
	t.AscendGreaterOrEqual(pivot, func(wc *waitingClaim) bool {
		if fits(wc.claim) {
			found = wc
			return false
		}
		return true
	})
	return found
}
