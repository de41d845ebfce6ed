package resourceversion

import (
	"strconv"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// FuzzOlder: Older is a strict order on the copies of one object: never
// both ways, never a copy older than itself, never across UIDs, and, for
// versions that parse, the numeric order (never the text order: "9" is
// older than "10").
func FuzzOlder(f *testing.F) {
	f.Add("uid", "9", "uid", "10")
	f.Add("uid", "", "uid", "x")
	f.Add("a", "1", "b", "2")
	f.Add("uid", "18446744073709551616", "uid", "1")
	f.Fuzz(func(t *testing.T, uidA, rvA, uidB, rvB string) {
		a := &metav1.ObjectMeta{UID: types.UID(uidA), ResourceVersion: rvA}
		b := &metav1.ObjectMeta{UID: types.UID(uidB), ResourceVersion: rvB}
		ab, ba := Older(a, b), Older(b, a)
		if ab && ba || Older(a, a) {
			t.Fatalf("Older(%q, %q) both ways or reflexive", rvA, rvB)
		}
		if uidA != uidB && (ab || ba) {
			t.Fatalf("copies of different objects (%q, %q) ordered", uidA, uidB)
		}
		va, errA := strconv.ParseUint(rvA, 10, 64)
		vb, errB := strconv.ParseUint(rvB, 10, 64)
		if want := uidA == uidB && errA == nil && errB == nil && va < vb; ab != want {
			t.Fatalf("Older(%q, %q) = %v, want %v", rvA, rvB, ab, want)
		}
	})
}
