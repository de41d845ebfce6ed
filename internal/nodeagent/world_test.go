package nodeagent

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/volplane/volplane/internal/mounting"
)

// A staging's record holds only driver and handle: nameStaged names it by
// a publication of the volume, else by the CSI PV with that driver and
// handle (looked up by unique volume name, not by listing every PV: at
// 100,000 PVs that list was a twelfth of a 1,000-node cluster's CPU while
// pods were deleted), the least name of several, else by its handle.
func TestStagingsAreNamedByPublicationThenPVThenHandle(t *testing.T) {
	const node, driver, other = "node-1", "csi.example.com", "other.example.com"
	pv := func(name, drv, handle string) runtime.Object {
		return &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PersistentVolumeSpec{
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: drv, VolumeHandle: handle}}}}
	}
	a := syncedAgent(t, node, pv("pv-b", driver, "h-1"), pv("pv-a", driver, "h-1"), pv("pv-other", other, "h-1"),
		pv("pv-2", driver, "h-2"), &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}})
	w := mounting.World{
		Staged: []mounting.Staged{
			{Driver: driver, Handle: "h-1"},
			{Driver: other, Handle: "h-1"},
			{Driver: driver, Handle: "h-2"},
			{Driver: driver, Handle: "h-3"},
			{Driver: driver, Handle: "h-gone"},
			{Driver: driver, Handle: "h-named", PV: "kept"},
		},
		Published: []mounting.Published{{Driver: driver, Handle: "h-3", PV: "pv-published"}},
	}
	a.nameStaged(&w)
	want := []string{"pv-a", "pv-other", "pv-2", "pv-published", "h-gone", "kept"}
	for i, s := range w.Staged {
		if s.PV != want[i] {
			t.Errorf("staging %s/%s named %q, want %q", s.Driver, s.Handle, s.PV, want[i])
		}
	}
}
