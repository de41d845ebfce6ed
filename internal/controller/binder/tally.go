package binder

import (
	v1 "k8s.io/api/core/v1"

	"github.com/volplane/volplane/internal/binding"
	"github.com/volplane/volplane/internal/index"
)

// tallies remembers, per waiting claim, the tally of its candidates (the PVs
// of its class and those pre-bound to it), so that a resync of a claim whose
// candidates did not change costs O(1), not a Match over its whole class.
// Entries go when the claim is deleted or stops wanting a tally. Guarded by
// Controller.mu, like the index whose Version it keeps.
type tallies struct {
	byKey map[string]countedTally
}

// countedTally is the tally of a claim's candidates, without the PVs of
// other classes, and what it was counted from.
type countedTally struct {
	version index.Version
	// claimVersion: the claim's resourceVersion; a new request, selector or
	// class means counting again.
	claimVersion string
	// candidates is how many PVs were handed to Match: every other PV the
	// index holds is of another class.
	candidates int
	tally      binding.Tally
}

func newTallies() *tallies { return &tallies{byKey: map[string]countedTally{}} }

// tally returns the claim's tally over every PV held: remembered while the
// claim and its candidates are unchanged (only the number of other PVs is
// brought up to date), counted again otherwise. Match runs outside c.mu: the
// candidates are informer objects, never modified, and one claim is synced
// by one worker at a time.
func (c *Controller) tally(claim *v1.PersistentVolumeClaim) *binding.Tally {
	key := binding.ClaimKey(claim)
	c.mu.Lock()
	version, total := c.index.Version(claim), c.index.Len()
	counted, ok := c.tallies.byKey[key]
	if ok && counted.version == version && counted.claimVersion == claim.ResourceVersion {
		c.mu.Unlock()
		t := counted.tally.WithOtherClass(total - counted.candidates)
		return &t
	}
	candidates := c.index.Candidates(claim)
	c.mu.Unlock()
	chosen, verdicts := binding.Match(claim, candidates, false)
	counted = countedTally{version: version, claimVersion: claim.ResourceVersion,
		candidates: len(candidates), tally: binding.Count(verdicts, chosen != nil, 0)}
	c.mu.Lock()
	c.tallies.byKey[key] = counted
	c.mu.Unlock()
	t := counted.tally.WithOtherClass(total - counted.candidates)
	return &t
}

// forget drops a claim's tally; the caller holds c.mu.
func (t *tallies) forget(key string) { delete(t.byKey, key) }
