package binder

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/volplane/volplane/internal/index"
)

// BenchmarkWaitingClaimSync is one sync of a claim that no PV fits, with
// 10,000 PVs of its class (all too small), as a resync runs it:
//   - unchanged: nothing moved since its last sync, which must cost O(1) on
//     top of FindBest;
//   - changed: a PV of its class changed before each sync and the last
//     count is old enough, so the tally is counted again: a Match over the
//     whole class;
//   - churning: a PV of its class changed before each sync, a millisecond
//     apart: the tally waits for the class to settle, O(1) again.
//
// None records an event: the situation stays the same.
func BenchmarkWaitingClaimSync(b *testing.B) {
	for _, c := range []struct {
		name string
		step time.Duration // clock step before each sync; 0: no PV changes
	}{{"unchanged", 0}, {"changed", index.MaxStaleResyncs * time.Minute}, {"churning", time.Millisecond}} {
		b.Run(c.name+"/10000", func(b *testing.B) { benchmarkWaitingClaimSync(b, 10_000, c.step) })
	}
}

func benchmarkWaitingClaimSync(b *testing.B, n int, step time.Duration) {
	claim := claimFor("data", "10Gi", rwo)
	claim.ResourceVersion = "1"
	claim.Status.Phase = v1.ClaimPending // as written by its first sync: no write per sync
	f := newFakeBinder(b, claim)
	for i := range n {
		f.informerAdds(b, volumeOf(fmt.Sprintf("pv-%05d", i), "1Gi", rwo))
	}
	for range 2 { // the second sync, a period later, counts
		if _, err := f.syncClaim(ctx, "ns/data"); err != nil {
			b.Fatal(err)
		}
		f.clock.Step(f.Controller.resync)
	}
	if evs := f.recorded(); len(evs) != 2 {
		b.Fatalf("recorded %q, want ProvisioningFailed and NoVolumeFits", evs)
	}
	moving := volumeOf("pv-00000", "1Gi", rwo)
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if step > 0 {
			pv := moving.DeepCopy()
			pv.ResourceVersion = strconv.Itoa(i + 1)
			f.mu.Lock()
			f.index.Upsert(pv)
			f.mu.Unlock()
			f.clock.Step(step)
		}
		if _, err := f.syncClaim(ctx, "ns/data"); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if evs := f.recorded(); len(evs) != 0 {
		b.Fatalf("recorded %q during the syncs, want nothing", evs)
	}
}
