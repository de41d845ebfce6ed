package index

import (
	"fmt"
	"testing"
)

// BenchmarkWake is the scenario that was quadratic: n claims of one class
// and size wait, and PVs arrive one by one while every claim woken before is
// still busy, so each PV wakes the next claim in arrival order. The cost of
// a wake should not grow with n.
func BenchmarkWake(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) { benchmarkWake(b, n) })
	}
}

func benchmarkWake(b *testing.B, n int) {
	w := NewWaiting()
	keys := make([]string, n)
	pvNames := make([]string, n)
	for i := range n {
		claim := claimFor(fmt.Sprintf("c%06d", i), "1Gi")
		w.Update(claim)
		keys[i] = "ns/" + claim.Name
		pvNames[i] = fmt.Sprintf("pv%06d", i)
	}
	// One PV object renamed for each wake: the waiting claims keep only the
	// name, and n PV objects would measure the allocator.
	pv := volumeOf("", "1Gi")
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		j := i % n
		if j == 0 && i > 0 {
			b.StopTimer()
			for _, key := range keys {
				w.Release(key)
			}
			b.StartTimer()
		}
		pv.Name = pvNames[j]
		if key, ok := w.Wake(pv, always); !ok || key != keys[j] {
			b.Fatalf("%s woke %q, %v; want %s", pv.Name, key, ok, keys[j])
		}
	}
}
