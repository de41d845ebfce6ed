package csi

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// firstContaining, which looks only at the endpoints having a segment's
// rarest pair, chooses what the plain rule chooses (the first endpoint of
// the driver, in the order given, whose topology has every pair of the
// segment: firstMatching with contains), for random pools of several
// drivers whose endpoints report overlapping topologies of one to three
// keys, or none, and random segments, empty ones and ones no endpoint has
// included.
func TestFirstContainingIsTheFirstMatchingEndpoint(t *testing.T) {
	keys, values := []string{"zone", "rack", "node"}, []string{"a", "b", "c"}
	drivers := []string{"d1", "d2"}
	randomMap := func(r *rand.Rand) map[string]string {
		m := map[string]string{}
		for _, k := range keys {
			if r.IntN(3) > 0 {
				m[k] = values[r.IntN(len(values))]
			}
		}
		return m
	}
	checked, found := 0, 0
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 1))
		var eps []*Endpoint
		for i := range r.IntN(12) {
			e := &Endpoint{Address: fmt.Sprint(i), Info: Info{Driver: drivers[r.IntN(len(drivers))]}}
			if r.IntN(5) > 0 {
				e.Info.Topology = randomMap(r)
			}
			eps = append(eps, e)
		}
		p := NewPool(eps...)
		for range 30 {
			driver, segment := drivers[r.IntN(len(drivers))], randomMap(r)
			want := firstMatching(p.byDriver[driver], func(t map[string]string) bool { return contains(t, segment) })
			got := p.firstContaining(driver, segment)
			if got != want {
				t.Fatalf("seed %d: driver %s segment %v: got %v, want %v (endpoints %v)", seed, driver, segment, got, want, p.byDriver[driver])
			}
			checked++
			if want != nil {
				found++
			}
		}
	}
	// Neither side of the comparison may be mostly nil.
	if found < checked/10 || found > checked*9/10 {
		t.Errorf("%d of %d segments had an endpoint: the cases are lopsided", found, checked)
	}
}
