package binding

import (
	"fmt"
	"sort"

	v1 "k8s.io/api/core/v1"
)

// fit is a PV that passed every filter, with what decides among fits.
type fit struct {
	pv       *v1.PersistentVolume
	rank     int // access-mode group rank
	preBound bool
}

// better orders fits the way Kubernetes picks: the group with fewest access
// modes first; inside it a PV pre-bound to the claim; then the smallest
// capacity; then (our tie-break, Kubernetes uses list order) the name.
func better(a, b fit) bool {
	if a.rank != b.rank {
		return a.rank < b.rank
	}
	if a.preBound != b.preBound {
		return a.preBound
	}
	ca, cb := Capacity(a.pv), Capacity(b.pv)
	if c := ca.Cmp(cb); c != 0 {
		return c < 0
	}
	return a.pv.Name < b.pv.Name
}

// Match finds the best PV for the claim among candidates and returns a
// Verdict for every candidate that was not chosen, sorted by PV name. The
// choice is the one Kubernetes makes (see better and Request.check), except
// that PVs in phase Pending count as free.
func Match(claim *v1.PersistentVolumeClaim, candidates []*v1.PersistentVolume, delayBinding bool) (*v1.PersistentVolume, []Verdict) {
	r := NewRequest(claim)
	verdicts := make([]Verdict, 0, len(candidates))
	var fits []fit
	for _, pv := range candidates {
		reason, detail := r.check(pv, delayBinding)
		if reason != ReasonNone {
			verdicts = append(verdicts, Verdict{PV: pv.Name, Reason: reason, Detail: detail})
			continue
		}
		modes, _ := ModesOf(pv.Spec.AccessModes)
		fits = append(fits, fit{pv: pv, rank: modes.Rank(), preBound: pv.Spec.ClaimRef != nil})
	}
	var chosen *v1.PersistentVolume
	if len(fits) > 0 {
		best := fits[0]
		for _, f := range fits[1:] {
			if better(f, best) {
				best = f
			}
		}
		chosen = best.pv
		for _, f := range fits {
			if f.pv != best.pv {
				verdicts = append(verdicts, loserVerdict(f, best))
			}
		}
	}
	sort.SliceStable(verdicts, func(i, j int) bool { return verdicts[i].PV < verdicts[j].PV })
	return chosen, verdicts
}

// loserVerdict explains why a PV that fits lost to the chosen one.
func loserVerdict(f, chosen fit) Verdict {
	v := Verdict{PV: f.pv.Name}
	fc, cc := Capacity(f.pv), Capacity(chosen.pv)
	switch {
	case f.rank != chosen.rank:
		fm, _ := ModesOf(f.pv.Spec.AccessModes)
		cm, _ := ModesOf(chosen.pv.Spec.AccessModes)
		v.Reason = ReasonMoreAccessModes
		v.Detail = fmt.Sprintf("modes [%s]; chosen %s has [%s]", fm, chosen.pv.Name, cm)
	case chosen.preBound && !f.preBound:
		v.Reason = ReasonNotChosen
		v.Detail = fmt.Sprintf("%s is pre-bound to the claim", chosen.pv.Name)
	case fc.Cmp(cc) > 0:
		v.Reason = ReasonLargerThanChosen
		v.Detail = fmt.Sprintf("capacity %s; chosen %s has %s", fc.String(), chosen.pv.Name, cc.String())
	default:
		v.Reason = ReasonNotChosen
		v.Detail = fmt.Sprintf("%s has the same capacity and sorts first by name", chosen.pv.Name)
	}
	return v
}
