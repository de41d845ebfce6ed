package index

import (
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/internal/binding"
)

// Tallies remembers, per waiting claim, the tally of its candidates (the PVs
// of its class and those pre-bound to it), so that a resync costs O(1), not
// a Match over the claim's whole class, unless something it counts changed.
//
// Counting waits for the situation to settle: a claim is counted once it
// and its candidates have stayed the same for a resync period, or when the
// last count (or the first look) is older than MaxStaleResyncs periods. A
// claim bound or provisioned within a period never pays for a count, and
// while PVs keep arriving in a class (a bulk import, the benchmarks) its
// waiting claims are neither recounted nor reported at each resync: that
// would be O(class size) per claim and resync, quadratic overall, and one
// event per claim and resync, for news outdated when read.
//
// Entries go when the claim is deleted or stops wanting a tally. Not safe
// for concurrent use: the controller guards it with the Index whose Version
// it keeps.
type Tallies struct {
	byKey map[string]countedTally
}

// TallySource is what a tally is counted from: the index's Version of the
// claim's candidates and what of the claim itself decides its verdicts.
type TallySource struct {
	candidates Version
	request    string
}

// TallySource is the claim's source as the index holds it now.
func (x *Index) TallySource(claim *v1.PersistentVolumeClaim) TallySource {
	return TallySource{candidates: x.Version(claim), request: requestOf(claim)}
}

// Count is one count of a claim's candidates.
type Count struct {
	// From is the source counted.
	From TallySource
	// Candidates is how many PVs were handed to Match: every other PV the
	// index holds is of another class.
	Candidates int
	// Tally is binding.Count over the candidates' verdicts.
	Tally binding.Tally
	// Total is how many PVs the index held.
	Total int
}

// countedTally is a claim's tally of its candidates, without the PVs of
// other classes, and what it was counted from.
type countedTally struct {
	counted bool
	from    TallySource
	// since is when it was counted, or first looked at before that.
	since time.Time
	// seen is the newest source looked at, unchanged since seenSince.
	seen       TallySource
	seenSince  time.Time
	candidates int
	tally      binding.Tally
	// total is the number of PVs held when the tally was last reported.
	// While the candidates are unchanged it follows the index (the change
	// was to other classes); while a count waits, the last tally is
	// reported as it was, stale but true of a moment.
	total int
}

// MaxStaleResyncs bounds, in resync periods, how long a tally may lag
// behind PVs that keep changing (5 minutes at the default 15 s).
const MaxStaleResyncs = 20

// NewTallies returns an empty Tallies.
func NewTallies() *Tallies { return &Tallies{byKey: map[string]countedTally{}} }

// Look is a sync's look at a claim's tally, at now, with the claim's
// current source and the index's total: it returns the tally to report
// (nil before the first count) and whether a count is due, settle being
// the resync period. When one is due, the caller matches the candidates
// and hands the result to Counted.
func (t *Tallies) Look(key string, now time.Time, current TallySource, total int, settle time.Duration) (report *binding.Tally, due bool) {
	ct, ok := t.byKey[key]
	if !ok {
		ct = countedTally{since: now, seen: current, seenSince: now}
	}
	if ct.due(now, current, settle) {
		return nil, true
	}
	if ct.counted && current == ct.from {
		ct.total = total
	}
	t.byKey[key] = ct
	return ct.report(), false
}

// Counted remembers a count made at now and returns it as reported.
func (t *Tallies) Counted(key string, now time.Time, c Count) *binding.Tally {
	ct := countedTally{counted: true, from: c.From, since: now, seen: c.From, seenSince: now,
		candidates: c.Candidates, tally: c.Tally, total: c.Total}
	t.byKey[key] = ct
	return ct.report()
}

// Forget drops a claim's tally.
func (t *Tallies) Forget(key string) { delete(t.byKey, key) }

// Len is how many claims have a tally remembered.
func (t *Tallies) Len() int { return len(t.byKey) }

// due says whether to count now, having looked at the current source.
func (t *countedTally) due(now time.Time, current TallySource, settle time.Duration) bool {
	if t.counted && current == t.from {
		return false
	}
	if current != t.seen {
		t.seen, t.seenSince = current, now
	}
	return now.Sub(t.seenSince) >= settle || now.Sub(t.since) >= MaxStaleResyncs*settle
}

// report is the tally of every PV, nil before the first count.
func (t *countedTally) report() *binding.Tally {
	if !t.counted {
		return nil
	}
	all := t.tally.WithOtherClass(t.total - t.candidates)
	return &all
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
