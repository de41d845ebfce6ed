package bench

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// A pair is gone once both its claim and its PV were seen deleted, in
// either order, tombstones included; other objects belong to no pair.
func TestPairGoneNeedsClaimAndVolume(t *testing.T) {
	p := newPairsGone()
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: claimName(7)}}
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: volumeName(7)}}
	i, ok := pairIndex(cache.DeletedFinalStateUnknown{Key: "bench/" + claim.Name, Obj: claim})
	if !ok || i != 7 {
		t.Fatalf("pairIndex(tombstone of %s) = %d, %v", claim.Name, i, ok)
	}
	if p.gone(i) {
		t.Error("pair 7 gone with its claim alone")
	}
	if j, ok := pairIndex(pv); !ok || j != 7 || !p.gone(j) {
		t.Errorf("pair 7 not gone with its claim and PV (index %d, %v)", j, ok)
	}
	for _, other := range []any{&corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "ceiling-x"}}, &corev1.Pod{}} {
		if _, ok := pairIndex(other); ok {
			t.Errorf("%T counted as a pair", other)
		}
	}
}

// The writes the timed workload makes are taken off the controllers':
// the raised requests (expand), both deletions (protection), nothing
// elsewhere.
func TestTimedWorkloadWrites(t *testing.T) {
	if w := timedWorkloadWrites(Expand, 5); len(w) != 1 || w[raiseWrite] != 5 {
		t.Errorf("expand: %v", w)
	}
	if w := timedWorkloadWrites(Protection, 5); len(w) != 2 || w["persistentvolumeclaims DELETE"] != 5 || w["persistentvolumes DELETE"] != 5 {
		t.Errorf("protection: %v", w)
	}
	if w := timedWorkloadWrites(Static, 5); len(w) != 0 {
		t.Errorf("static: %v", w)
	}
}

// The protection report speaks of pairs gone.
func TestProtectionReportWording(t *testing.T) {
	r := Report{Scenario: Protection, Pairs: 2, QPS: 20, Burst: 30, Workers: 16,
		Sides: []Side{{Name: Volplane, Bound: 2, Complete: true, Seconds: 1, BindsPerSec: 2, WritesPerBind: 2},
			{Name: Reference, Bound: 2, Complete: true, Seconds: 1, BindsPerSec: 2, WritesPerBind: 2}}}
	var b strings.Builder
	if err := r.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"pairs deleted", "time to all gone", "pairs gone/s", "p50 claim deleted → pair gone (ms)", "API writes per pair"} {
		if !strings.Contains(out, want) {
			t.Errorf("protection report lacks %q:\n%s", want, out)
		}
	}
	for _, gone := range []string{"bind", "Bound"} {
		if strings.Contains(out, gone) {
			t.Errorf("protection report still says %q:\n%s", gone, out)
		}
	}
}
