package claimstatus

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/internal/expansion"
)

func qty(s string) resource.Quantity { return resource.MustParse(s) }

// pendingClaim waits for the node to finish growing it to 2Gi, beside a
// condition of someone else's.
func pendingClaim() *v1.PersistentVolumeClaim {
	return &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "data"},
		Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound,
			Capacity:                  v1.ResourceList{v1.ResourceStorage: qty("1Gi")},
			AllocatedResources:        v1.ResourceList{v1.ResourceStorage: qty("2Gi")},
			AllocatedResourceStatuses: map[v1.ResourceName]v1.ClaimResourceStatus{v1.ResourceStorage: v1.PersistentVolumeClaimNodeResizePending},
			Conditions: []v1.PersistentVolumeClaimCondition{
				{Type: "Other", Status: v1.ConditionTrue},
				{Type: v1.PersistentVolumeClaimFileSystemResizePending, Status: v1.ConditionTrue}}}}
}

// A finished node expansion on the wire: the new capacity, the storage
// resize status and the resize conditions deleted, the other condition
// untouched, and the resourceVersion only when checked.
func TestPatchCarriesOnlyTheChange(t *testing.T) {
	old := pendingClaim()
	old.ResourceVersion = "42"
	want := expansion.MarkNodeResizeFinished(old, qty("2Gi"))
	for _, pre := range []Precondition{IfUnchanged, Always} {
		raw, err := Patch(old, want, pre)
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
		if pre == IfUnchanged {
			wantPatch["metadata"] = map[string]any{"resourceVersion": "42"}
		}
		if !reflect.DeepEqual(got, wantPatch) {
			t.Errorf("%s: patch\n %s\nwant\n %v", pre, raw, wantPatch)
		}
	}
}

// The resizer's patches are strategic merge patches of the changes only,
// with the resourceVersion precondition when asked for.
func TestResizerPatchesCarryOnlyTheChange(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	old := &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "claim1", UID: "u1", ResourceVersion: "7",
			Annotations: map[string]string{expansion.AnnNodeExpansionNotRequired: "true", "keep": "me"}},
		Spec: v1.PersistentVolumeClaimSpec{VolumeName: "pv1", AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Resources: v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: qty("2Mi")}}},
		Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound, Capacity: v1.ResourceList{v1.ResourceStorage: qty("1Mi")}},
	}
	marked := expansion.MarkControllerResizeInProgress(old, qty("2Mi"), at)
	patch, err := Patch(old, marked, IfUnchanged)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"metadata":{"annotations":{"volume.kubernetes.io/node-expansion-not-required":null},"resourceVersion":"7"},` +
		`"status":{"allocatedResourceStatuses":{"storage":"ControllerResizeInProgress"},"allocatedResources":{"storage":"2Mi"},` +
		`"conditions":[{"lastProbeTime":null,"lastTransitionTime":"2026-11-25T12:00:00Z","status":"True","type":"Resizing"}]}}`
	if string(patch) != want {
		t.Errorf("in progress:\n got %s\nwant %s", patch, want)
	}

	marked.ResourceVersion = "8"
	done := expansion.MarkResizeFinished(marked, qty("2Mi"))
	patch, err = Patch(marked, done, Always)
	if err != nil {
		t.Fatal(err)
	}
	// No condition left: the list goes (the resourceVersion check keeps
	// it from wiping a condition added meanwhile).
	want = `{"metadata":{"annotations":{"volume.kubernetes.io/node-expansion-not-required":"true"}},` +
		`"status":{"allocatedResourceStatuses":null,"capacity":{"storage":"2Mi"},"conditions":null}}`
	if string(patch) != want {
		t.Errorf("finished:\n got %s\nwant %s", patch, want)
	}

	// With a condition of someone else's, only ours is deleted.
	other := marked.DeepCopy()
	other.Status.Conditions = append(other.Status.Conditions, v1.PersistentVolumeClaimCondition{Type: "ModifyingVolume", Status: v1.ConditionTrue})
	patch, err = Patch(other, expansion.MarkResizeFinished(other, qty("2Mi")), Always)
	if err != nil {
		t.Fatal(err)
	}
	want = `{"metadata":{"annotations":{"volume.kubernetes.io/node-expansion-not-required":"true"}},` +
		`"status":{"$setElementOrder/conditions":[{"type":"ModifyingVolume"}],"allocatedResourceStatuses":null,` +
		`"capacity":{"storage":"2Mi"},"conditions":[{"$patch":"delete","type":"Resizing"}]}}`
	if string(patch) != want {
		t.Errorf("finished beside another condition:\n got %s\nwant %s", patch, want)
	}
}
