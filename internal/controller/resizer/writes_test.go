package resizer

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/internal/expansion"
)

// The claim patches are strategic merge patches of the changes only, with
// the resourceVersion precondition when asked for.
func TestClaimPatchesCarryOnlyTheChange(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC))
	old := testClaim("2Mi", func(c *v1.PersistentVolumeClaim) {
		c.ResourceVersion = "7"
		c.Annotations = map[string]string{expansion.AnnNodeExpansionNotRequired: "true", "keep": "me"}
	})
	marked := expansion.MarkControllerResizeInProgress(old, qty("2Mi"), at)
	patch, err := expansion.StatusPatch(old, marked, true)
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
	patch, err = expansion.StatusPatch(marked, done, false)
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
	patch, err = expansion.StatusPatch(other, expansion.MarkResizeFinished(other, qty("2Mi")), false)
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
