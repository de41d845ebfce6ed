package binding

import (
	"slices"
	"strconv"
)

// reasonShort is each reason as a counted phrase ("7 too small"), for the
// counted event and for explain's grouping. Every Reason has one.
var reasonShort = map[Reason]string{
	ReasonInvalidSelector:         "invalid claim selector",
	ReasonBeingDeleted:            "being deleted",
	ReasonBoundToOther:            "bound to other claims",
	ReasonPreBoundToOther:         "reserved for other claims",
	ReasonClassMismatch:           "other class",
	ReasonVolumeModeMismatch:      "other volume mode",
	ReasonAttributesClassMismatch: "other attributes class",
	ReasonAccessModes:             "missing access modes",
	ReasonTooSmall:                "too small",
	ReasonSelector:                "not selected by labels",
	ReasonNotAvailable:            "released or failed",
	ReasonWaitForFirstConsumer:    "left to the scheduler",
	ReasonMoreAccessModes:         "fit with more access modes",
	ReasonLargerThanChosen:        "fit but larger",
	ReasonNotChosen:               "fit but not chosen",
}

// Short is the reason as a counted phrase: "7 too small".
func (r Reason) Short() string {
	if s, ok := reasonShort[r]; ok {
		return s
	}
	return string(r)
}

// Group is one reason and how many volumes it rejected.
type Group struct {
	Reason Reason `json:"reason"`
	Count  int    `json:"count"`
}

// Tally is the verdicts of one match counted by reason: what a person needs
// to see first ("0/12 volumes available: 7 too small, 3 other class").
type Tally struct {
	// Considered is every volume counted, the chosen one included.
	Considered int `json:"considered"`
	// Available is how many of them fit the claim (the chosen one and the
	// fitting losers).
	Available int `json:"available"`
	// Groups are the counts by reason, largest first, ties in the order of
	// Reasons().
	Groups []Group `json:"groups"`
	// otherClass is how many of the ClassMismatch volumes were never handed
	// to Match: the situation of a NoVolumeFits event leaves them out.
	otherClass int
}

// Count tallies the verdicts of Match. chosen says whether Match chose a
// volume (it has no verdict of its own). otherClass counts volumes of other
// classes that were not handed to Match at all (index.Candidates leaves
// them out): they are reported as ReasonClassMismatch.
func Count(verdicts []Verdict, chosen bool, otherClass int) Tally {
	counts := map[Reason]int{}
	t := Tally{Considered: len(verdicts)}
	if chosen {
		t.Considered++
		t.Available++
	}
	for _, v := range verdicts {
		counts[v.Reason]++
		if v.Reason.Fits() {
			t.Available++
		}
	}
	t.Groups = Groups(counts)
	return t.WithOtherClass(otherClass)
}

// WithOtherClass is the tally with n more volumes of other classes (n < 0:
// fewer) that were not handed to Match: a controller that kept the tally of
// a claim's candidates brings the count of every other volume up to date
// without matching again.
func (t Tally) WithOtherClass(n int) Tally {
	if n == 0 {
		return t
	}
	counts := make(map[Reason]int, len(t.Groups)+1)
	for _, g := range t.Groups {
		counts[g.Reason] = g.Count
	}
	counts[ReasonClassMismatch] += n
	t.Considered += n
	t.otherClass += n
	t.Groups = Groups(counts)
	return t
}

// Groups orders counts by reason largest first, ties in the order of
// Reasons(); reasons counted zero times are left out.
func Groups(counts map[Reason]int) []Group {
	var groups []Group
	for _, r := range Reasons() {
		if counts[r] > 0 {
			groups = append(groups, Group{Reason: r, Count: counts[r]})
		}
	}
	slices.SortStableFunc(groups, func(a, b Group) int { return b.Count - a.Count })
	return groups
}

// String is the tally in one line, like the scheduler's "0/3 nodes are
// available": "0/12 volumes available: 7 too small, 3 other class, 2 bound
// to other claims". With nothing considered: "no volumes exist".
func (t Tally) String() string {
	if t.Considered == 0 {
		return "no volumes exist"
	}
	noun := " volumes available"
	if t.Considered == 1 {
		noun = " volume available"
	}
	// strconv, not fmt: a waiting claim's sync renders its tally each time.
	b := make([]byte, 0, 64+24*len(t.Groups))
	b = strconv.AppendInt(b, int64(t.Available), 10)
	b = append(b, '/')
	b = strconv.AppendInt(b, int64(t.Considered), 10)
	b = append(b, noun...)
	for i, g := range t.Groups {
		if i == 0 {
			b = append(b, ": "...)
		} else {
			b = append(b, ", "...)
		}
		b = strconv.AppendInt(b, int64(g.Count), 10)
		b = append(b, ' ')
		b = append(b, g.Reason.Short()...)
	}
	return string(b)
}
