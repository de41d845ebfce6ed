package loop

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

func TestInformerCopiesCarryNoManagedFields(t *testing.T) {
	pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv", Labels: map[string]string{"a": "b"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate}}}}
	out, err := StripManagedFields(pv)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*v1.PersistentVolume)
	if got.ManagedFields != nil || got.Labels["a"] != "b" {
		t.Errorf("after the transform: managedFields %v, labels %v; want none, and the rest kept", got.ManagedFields, got.Labels)
	}
	// What is not an object (a tombstone) passes through untouched.
	tomb := cache.DeletedFinalStateUnknown{Key: "pv", Obj: pv}
	if out, err := StripManagedFields(tomb); err != nil || out != any(tomb) {
		t.Errorf("a tombstone came out as %v, %v", out, err)
	}
}
