package binder

import (
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/internal/binding"
	"github.com/volplane/volplane/internal/index"
)

// tallies remembers, per waiting claim, the tally of its candidates (the PVs
// of its class and those pre-bound to it), so that a resync costs O(1), not
// a Match over the claim's whole class, unless something it counts changed.
//
// Counting waits for the situation to settle: a claim is counted once it
// and its candidates have stayed the same for a resync period, or when the
// last count (or the first look) is older than maxStaleResyncs periods. A
// claim bound or provisioned within a period never pays for a count, and
// while PVs keep arriving in a class (a bulk import, the benchmarks) its
// waiting claims are neither recounted nor reported at each resync: that
// would be O(class size) per claim and resync, quadratic overall, and one
// event per claim and resync, for news outdated when read.
//
// Entries go when the claim is deleted or stops wanting a tally. Guarded by
// Controller.mu, like the index whose Version it keeps.
type tallies struct {
	byKey map[string]countedTally
}

// tallySource is what a tally is counted from: the index's Version of the
// claim's candidates and what of the claim itself decides its verdicts.
type tallySource struct {
	candidates index.Version
	request    string
}

// countedTally is a claim's tally of its candidates, without the PVs of
// other classes, and what it was counted from.
type countedTally struct {
	counted bool
	from    tallySource
	// since is when it was counted, or first looked at before that.
	since time.Time
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

// maxStaleResyncs bounds, in resync periods, how long a tally may lag
// behind PVs that keep changing (5 minutes at the default 15 s).
const maxStaleResyncs = 20

func newTallies() *tallies { return &tallies{byKey: map[string]countedTally{}} }

// due says whether to count now, having looked at the current source.
func (t *countedTally) due(now time.Time, current tallySource, settle time.Duration) bool {
	if t.counted && current == t.from {
		return false
	}
	if current != t.seen {
		t.seen, t.seenSince = current, now
	}
	return now.Sub(t.seenSince) >= settle || now.Sub(t.since) >= maxStaleResyncs*settle
}

// report is the tally of every PV, nil before the first count.
func (t *countedTally) report() *binding.Tally {
	if !t.counted {
		return nil
	}
	all := t.tally.WithOtherClass(t.total - t.candidates)
	return &all
}

// tally returns the claim's tally over every PV held: nil until counted,
// then the remembered one unless a count is due. Match runs outside c.mu:
// the candidates are informer objects, never modified, and one claim is
// synced by one worker at a time.
func (c *Controller) tally(claim *v1.PersistentVolumeClaim) *binding.Tally {
	key, now := binding.ClaimKey(claim), c.clock.Now()
	c.mu.Lock()
	current := tallySource{candidates: c.index.Version(claim), request: requestOf(claim)}
	total := c.index.Len()
	t, ok := c.tallies.byKey[key]
	if !ok {
		t = countedTally{since: now, seen: current, seenSince: now}
	}
	if !t.due(now, current, c.resync) {
		if t.counted && current == t.from {
			t.total = total
		}
		c.tallies.byKey[key] = t
		c.mu.Unlock()
		return t.report()
	}
	candidates := c.index.Candidates(claim)
	c.mu.Unlock()
	chosen, verdicts := binding.Match(claim, candidates, false)
	t = countedTally{counted: true, from: current, since: now, seen: current, seenSince: now,
		candidates: len(candidates), tally: binding.Count(verdicts, chosen != nil, 0), total: total}
	c.mu.Lock()
	c.tallies.byKey[key] = t
	c.mu.Unlock()
	return t.report()
}

// requestOf renders what of a claim decides its verdicts, besides its class
// (part of the index's Version) and its identity: its status and
// annotations, which the binder itself writes, do not.
func requestOf(claim *v1.PersistentVolumeClaim) string {
	s := claim.Spec
	var b strings.Builder
	if s.VolumeAttributesClassName != nil {
		b.WriteString(*s.VolumeAttributesClassName)
	}
	b.WriteByte('|')
	if s.VolumeMode != nil {
		b.WriteString(string(*s.VolumeMode))
	}
	b.WriteByte('|')
	if q, ok := s.Resources.Requests[v1.ResourceStorage]; ok {
		b.WriteString(q.String())
	}
	for _, m := range s.AccessModes {
		b.WriteByte('|')
		b.WriteString(string(m))
	}
	if s.Selector != nil {
		b.WriteByte('|')
		b.WriteString(metav1.FormatLabelSelector(s.Selector))
	}
	return b.String()
}

// forget drops a claim's tally; the caller holds c.mu.
func (t *tallies) forget(key string) { delete(t.byKey, key) }
