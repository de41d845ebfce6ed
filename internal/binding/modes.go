package binding

import (
	"math/bits"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// ModeSet is a set of access modes. Kubernetes groups PVs by the set of modes
// they offer and only ever looks at groups that include every requested mode.
type ModeSet uint8

// The bit order is the canonical order Kubernetes prints modes in.
const (
	ModeRWO ModeSet = 1 << iota
	ModeROX
	ModeRWX
	ModeRWOP
)

var modeBits = []struct {
	mode  v1.PersistentVolumeAccessMode
	bit   ModeSet
	short string
}{
	{v1.ReadWriteOnce, ModeRWO, "RWO"},
	{v1.ReadOnlyMany, ModeROX, "ROX"},
	{v1.ReadWriteMany, ModeRWX, "RWX"},
	{v1.ReadWriteOncePod, ModeRWOP, "RWOP"},
}

// ModesOf converts access modes to a set. Unknown modes are dropped, as the
// Kubernetes index drops them; unknown reports whether there were any, because
// a claim asking for an unknown mode can match nothing.
func ModesOf(modes []v1.PersistentVolumeAccessMode) (set ModeSet, unknown bool) {
	for _, m := range modes {
		found := false
		for _, b := range modeBits {
			if b.mode == m {
				set |= b.bit
				found = true
				break
			}
		}
		if !found {
			unknown = true
		}
	}
	return set, unknown
}

// Includes reports whether every mode of other is in s.
func (s ModeSet) Includes(other ModeSet) bool { return s&other == other }

// Len is the number of modes in the set.
func (s ModeSet) Len() int { return bits.OnesCount8(uint8(s)) }

// String prints the set as Kubernetes does, e.g. "RWO,ROX".
func (s ModeSet) String() string {
	var parts []string
	for _, b := range modeBits {
		if s&b.bit != 0 {
			parts = append(parts, b.short)
		}
	}
	return strings.Join(parts, ",")
}

// groupOrder holds every possible set, fewest modes first. Kubernetes leaves
// the order of groups of equal size unspecified (map order); we break the tie
// by bit value so that matching is deterministic.
var groupOrder, groupRank = buildGroupOrder()

func buildGroupOrder() ([]ModeSet, [16]int) {
	order := make([]ModeSet, 16)
	for i := range order {
		order[i] = ModeSet(i)
	}
	sort.Slice(order, func(i, j int) bool {
		if order[i].Len() != order[j].Len() {
			return order[i].Len() < order[j].Len()
		}
		return order[i] < order[j]
	})
	var rank [16]int
	for i, s := range order {
		rank[s] = i
	}
	return order, rank
}

// GroupOrder returns every ModeSet in the order matching searches them. A
// caller keeps the sets that include the requested modes.
func GroupOrder() []ModeSet { return append([]ModeSet(nil), groupOrder...) }

// Rank is the position of s in GroupOrder: lower ranks are searched first.
func (s ModeSet) Rank() int { return groupRank[s&0xF] }
