package binder

import (
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/volplane/volplane/internal/binding"
	"github.com/volplane/volplane/internal/index"
)

// tallies remembers, per waiting claim, the tally of its candidates (the PVs
// of its class and those pre-bound to it), so that a resync costs O(1), not
// a Match over the claim's whole class, unless something it counts changed.
//
// A change is not counted at once: the tally is counted again once what it
// counts has stayed the same for a resync period (settle), or when the last
// count is older than maxStale. While PVs of a class keep arriving (a bulk
// import, the trickle benchmark), every waiting claim of the class would
// otherwise pay O(class size) at each resync and record a new event each
// time: quadratic work, and one event per claim and resync, for news that
// is outdated when read. A single change to a quiet class is counted at the
// first look when the last count is older than maxStale, else a resync
// period later.
//
// Entries go when the claim is deleted or stops wanting a tally. Guarded by
// Controller.mu, like the index whose Version it keeps.
type tallies struct {
	byKey map[string]countedTally
}

// tallySource is what a tally was counted from: the index's Version of the
// claim's candidates and the claim's resourceVersion.
type tallySource struct {
	candidates index.Version
	claim      string
}

// countedTally is the tally of a claim's candidates, without the PVs of
// other classes, and what it was counted from.
type countedTally struct {
	from      tallySource
	countedAt time.Time
	// seen is the newest source looked at, unchanged since seenSince.
	seen      tallySource
	seenSince time.Time
	// candidates is how many PVs were handed to Match: every other PV the
	// index holds is of another class.
	candidates int
	tally      binding.Tally
	// total is the number of PVs held when the tally was last reported.
	// While the candidates are unchanged it follows the index (the change
	// was to other classes); while a count waits, the last tally is
	// reported as it was, stale but true of a moment.
	total int
}

// report is the tally of every PV: the candidates' plus the other classes'.
func (t *countedTally) report() *binding.Tally {
	all := t.tally.WithOtherClass(t.total - t.candidates)
	return &all
}

// maxStaleResyncs bounds, in resync periods, how long a tally may lag
// behind PVs that keep changing (5 minutes at the default 15 s).
const maxStaleResyncs = 20

func newTallies() *tallies { return &tallies{byKey: map[string]countedTally{}} }

// due says whether to count again, looking at the current source now.
func (t *countedTally) due(now time.Time, current tallySource, settle time.Duration) bool {
	if current == t.from {
		return false
	}
	if current != t.seen {
		t.seen, t.seenSince = current, now
	}
	return now.Sub(t.seenSince) >= settle || now.Sub(t.countedAt) >= maxStaleResyncs*settle
}

// tally returns the claim's tally over every PV held: the remembered one
// unless a count is due, else counted again. Match runs outside c.mu: the candidates are
// informer objects, never modified, and one claim is synced by one worker
// at a time.
func (c *Controller) tally(claim *v1.PersistentVolumeClaim) *binding.Tally {
	key, now := binding.ClaimKey(claim), c.clock.Now()
	c.mu.Lock()
	current := tallySource{candidates: c.index.Version(claim), claim: claim.ResourceVersion}
	total := c.index.Len()
	counted, ok := c.tallies.byKey[key]
	if ok && !counted.due(now, current, c.resync) {
		if current == counted.from {
			counted.total = total
		}
		c.tallies.byKey[key] = counted
		c.mu.Unlock()
		return counted.report()
	}
	candidates := c.index.Candidates(claim)
	c.mu.Unlock()
	chosen, verdicts := binding.Match(claim, candidates, false)
	counted = countedTally{from: current, countedAt: now, seen: current, seenSince: now,
		candidates: len(candidates), tally: binding.Count(verdicts, chosen != nil, 0), total: total}
	c.mu.Lock()
	c.tallies.byKey[key] = counted
	c.mu.Unlock()
	return counted.report()
}

// forget drops a claim's tally; the caller holds c.mu.
func (t *tallies) forget(key string) { delete(t.byKey, key) }
