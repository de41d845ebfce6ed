package expansion

import (
	"encoding/json"
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// A finished node expansion on the wire: the new capacity, the storage
// resize status and the resize conditions deleted, the other condition
// untouched, and the resourceVersion only when checked.
func TestStatusPatchCarriesOnlyTheChange(t *testing.T) {
	old := pendingClaim()
	old.ResourceVersion = "42"
	want := MarkNodeResizeFinished(old, resource.MustParse("2Gi"))
	for _, rvCheck := range []bool{true, false} {
		raw, err := StatusPatch(old, want, rvCheck)
		if err != nil {
			t.Fatal(err)
		}
		var got map[string]any
		if err := json.Unmarshal(raw, &got); err != nil {
			t.Fatal(err)
		}
		status := map[string]any{
			"capacity":                    map[string]any{"storage": "2Gi"},
			"allocatedResourceStatuses":   nil,
			"conditions":                  []any{map[string]any{"$patch": "delete", "type": string(v1.PersistentVolumeClaimFileSystemResizePending)}},
			"$setElementOrder/conditions": []any{map[string]any{"type": "Other"}},
		}
		wantPatch := map[string]any{"status": status}
		if rvCheck {
			wantPatch["metadata"] = map[string]any{"resourceVersion": "42"}
		}
		if !reflect.DeepEqual(got, wantPatch) {
			t.Errorf("rvCheck %v: patch\n %s\nwant\n %v", rvCheck, raw, wantPatch)
		}
	}
}
