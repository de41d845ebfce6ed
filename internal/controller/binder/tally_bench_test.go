package binder

import (
	"fmt"
	"strconv"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// BenchmarkWaitingClaimSync is one sync of a claim that no PV fits, with
// 10,000 PVs of its class (all too small). Unchanged: nothing moved since
// its last sync, the resync's case, which must cost O(1) on top of
// FindBest. Changed: a PV of its class changed before each sync, so the
// tally is counted again, a Match over the whole class. Both record
// nothing: the situation stays the same.
func BenchmarkWaitingClaimSync(b *testing.B) {
	for _, changed := range []bool{false, true} {
		name := map[bool]string{false: "unchanged", true: "changed"}[changed]
		b.Run(name+"/10000", func(b *testing.B) { benchmarkWaitingClaimSync(b, 10_000, changed) })
	}
}

func benchmarkWaitingClaimSync(b *testing.B, n int, changed bool) {
	claim := claimFor("data", "10Gi", rwo)
	claim.ResourceVersion = "1"
	claim.Status.Phase = v1.ClaimPending // as written by its first sync: no write per sync
	f := newFakeBinder(b, claim)
	for i := range n {
		f.informerAdds(b, volumeOf(fmt.Sprintf("pv-%05d", i), "1Gi", rwo))
	}
	if err := f.syncClaim(ctx, "ns/data"); err != nil {
		b.Fatal(err)
	}
	f.recorded()
	moving := volumeOf("pv-00000", "1Gi", rwo)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if changed {
			pv := moving.DeepCopy()
			pv.ResourceVersion = strconv.Itoa(i + 1)
			f.mu.Lock()
			f.index.Upsert(pv)
			f.mu.Unlock()
		}
		if err := f.syncClaim(ctx, "ns/data"); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if evs := f.recorded(); len(evs) != 0 {
		b.Fatalf("recorded %q during the syncs, want nothing", evs)
	}
}
