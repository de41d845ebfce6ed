package index

import (
	v1 "k8s.io/api/core/v1"

	"github.com/volplane/volplane/internal/binding"
)

// Version names the state of the PVs Candidates returns for a claim: while
// it stays equal, so do the candidates, and so does whatever was computed
// from them (the tally a waiting claim reports). Reservations are not part
// of it: Candidates ignores them.
type Version struct {
	class, claim uint64
}

// changes numbers every placement and removal of a PV and remembers, per
// class and per claimRef key, the number of the last one that touched its
// PVs. An entry goes with the last PV of its key: a key seen again gets a
// number never given before, so an old Version can never come back equal,
// and memory is bounded by the classes and claims PVs refer to now.
type changes struct {
	seq     uint64
	byClass map[string]uint64
	byClaim map[string]uint64
}

func newChanges() changes {
	return changes{byClass: map[string]uint64{}, byClaim: map[string]uint64{}}
}

// note records a change of e: call it after e's sets were updated.
func (c *changes) note(x *Index, e *entry) {
	c.seq++
	mark(c.byClass, e.shape.class, c.seq, x.byClass)
	if e.claimKey != "" {
		mark(c.byClaim, e.claimKey, c.seq, x.byClaim)
	}
}

func mark(last map[string]uint64, key string, seq uint64, sets map[string]set) {
	if _, ok := sets[key]; ok {
		last[key] = seq
	} else {
		delete(last, key)
	}
}

// Version returns the version of the claim's candidates in O(1).
func (x *Index) Version(claim *v1.PersistentVolumeClaim) Version {
	return Version{
		class: x.changes.byClass[binding.ClaimClass(claim)],
		claim: x.changes.byClaim[binding.ClaimKey(claim)],
	}
}
