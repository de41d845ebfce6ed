// Package resourceversion orders two copies of one API object. Informers,
// write answers and the copies a controller keeps reach it in no fixed
// order; whatever keeps a copy must never replace a newer one by an older.
package resourceversion

import (
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Older says whether a is an older copy of the same object than b. The API
// server documents resourceVersions as opaque, but etcd3 storage makes them
// increasing integers, and the reference controller relies on the same. A
// re-created object (another UID) is never older than the one it replaces,
// and an unparsable version is never older, so a stale copy is never pinned.
func Older(a, b metav1.Object) bool {
	if a.GetUID() != b.GetUID() {
		return false
	}
	av, errA := strconv.ParseUint(a.GetResourceVersion(), 10, 64)
	bv, errB := strconv.ParseUint(b.GetResourceVersion(), 10, 64)
	return errA == nil && errB == nil && av < bv
}
