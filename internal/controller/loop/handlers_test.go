package loop

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

// A delete handler may be given the object or a tombstone wrapping its last
// known state; As reads both, and refuses other types.
func TestAsReadsObjectsAndTombstones(t *testing.T) {
	pv := pvAt("7", "a")
	if got, ok := As[*v1.PersistentVolume](pv); !ok || got != pv {
		t.Errorf("plain object: got %v, %v", got, ok)
	}
	tombstone := cache.DeletedFinalStateUnknown{Key: "pv", Obj: pv}
	if got, ok := As[*v1.PersistentVolume](tombstone); !ok || got != pv {
		t.Errorf("tombstone: got %v, %v", got, ok)
	}
	if _, ok := As[*v1.PersistentVolumeClaim](tombstone); ok {
		t.Error("a tombstone of a PV read as a claim")
	}
	if _, ok := As[*v1.PersistentVolume](cache.DeletedFinalStateUnknown{Key: "pv"}); ok {
		t.Error("an empty tombstone read as a PV")
	}
}
