package index

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/volplane/volplane/internal/binding"
)

// FindBest returns the PV binding.Match would choose for the claim among all
// PVs held, ignoring PVs reserved by other claims; nil when none fits.
//
// Cost: for each access-mode group that includes the requested modes (at most
// 8 of the 16 possible sets), one O(log n) seek in the tree of the claim's
// shape, plus a look at the few PVs pre-bound to or reserved by the claim.
// With a label selector the tree is walked upward from the smallest large
// enough PV until one matches: worst case O(k), k the PVs of that shape at
// least as large as the request, when few or none of them match.
func (x *Index) FindBest(claim *v1.PersistentVolumeClaim, delayBinding bool) *v1.PersistentVolume {
	r := binding.NewRequest(claim)
	if r.SelectorErr != nil || r.UnknownModes {
		return nil
	}
	own := x.ownCandidates(r.Key)
	for _, modes := range groupOrder {
		if !modes.Includes(r.Modes) {
			continue
		}
		best, preBound := x.bestOwn(r, own, modes, delayBinding)
		if preBound {
			return best.pv
		}
		if !delayBinding {
			best = smaller(best, x.smallestFree(r, modes))
		}
		if best.pv != nil {
			return best.pv
		}
	}
	return nil
}

var groupOrder = binding.GroupOrder()

// ownCandidates lists the PVs that name the claim in their claimRef or that
// the claim reserved: the only PVs outside the trees it may get.
func (x *Index) ownCandidates(claimKey string) []*entry {
	var own []*entry
	for name := range x.byClaim[claimKey] {
		own = append(own, x.entries[name])
	}
	for name := range x.holds[claimKey] {
		if e := x.entries[name]; e != nil && e.claimKey != claimKey {
			own = append(own, e)
		}
	}
	return own
}

// bestOwn picks among the claim's own candidates in one access-mode group,
// preferring a PV pre-bound to the claim, as binding.Match does.
func (x *Index) bestOwn(r *binding.Request, own []*entry, modes binding.ModeSet, delay bool) (best item, preBound bool) {
	for _, e := range own {
		if e.shape.modes != modes || x.heldByOther(e.pv.Name, r.Key) || r.Check(e.pv, delay) != binding.ReasonNone {
			continue
		}
		isPreBound := e.claimKey != ""
		if best.pv == nil || (isPreBound && !preBound) || (isPreBound == preBound && itemLess(e.item, best)) {
			best, preBound = e.item, isPreBound
		}
	}
	return best, preBound
}

func (x *Index) heldByOther(pvName, claimKey string) bool {
	holder, ok := x.reserved[pvName]
	return ok && holder != claimKey
}

// smallestFree seeks the smallest free PV of the claim's shape in one group
// that is large enough and matches the selector.
func (x *Index) smallestFree(r *binding.Request, modes binding.ModeSet) item {
	t, ok := x.trees[shape{family: requestFamily(r), modes: modes}]
	if !ok {
		return item{}
	}
	var found item
	t.AscendGreaterOrEqual(item{capacity: r.Size}, func(it item) bool {
		if r.Selector == nil || r.Selector.Matches(labels.Set(it.pv.Labels)) {
			found = it
			return false
		}
		return true
	})
	return found
}

func smaller(a, b item) item {
	switch {
	case a.pv == nil:
		return b
	case b.pv == nil:
		return a
	case itemLess(b, a):
		return b
	}
	return a
}
