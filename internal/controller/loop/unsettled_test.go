package loop

import (
	"slices"
	"testing"
)

// TestUnsettledKeepsWhatTheLastSightSaidIsNotAtRest: a key is in the set
// from a sight not at rest until a sight at rest or its deletion, whatever
// came before.
func TestUnsettledKeepsWhatTheLastSightSaidIsNotAtRest(t *testing.T) {
	u := NewUnsettled()
	u.Saw("a", false)
	u.Saw("b", false)
	u.Saw("c", true)
	u.Saw("b", false) // seen again, still once
	u.Saw("d", false)
	u.Saw("d", true) // settled
	u.Saw("e", false)
	u.Gone("e")
	got := u.Keys()
	slices.Sort(got)
	if want := []string{"a", "b"}; !slices.Equal(got, want) {
		t.Fatalf("Keys %v, want %v", got, want)
	}
}
