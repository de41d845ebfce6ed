package protection

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The cases of the reference's TestPVProtectionController, as decisions,
// over every phase.
func TestDecideVolume(t *testing.T) {
	pv := func(ph v1.PersistentVolumePhase, finalizer, deleted bool) *v1.PersistentVolume {
		p := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv1"}, Status: v1.PersistentVolumeStatus{Phase: ph}}
		if finalizer {
			p.Finalizers = []string{"other", VolumeFinalizer}
		}
		if deleted {
			p.DeletionTimestamp = &metav1.Time{}
		}
		return p
	}
	cases := []struct {
		name   string
		pv     *v1.PersistentVolume
		want   Action
		reason Reason
	}{
		{"PV without finalizer -> finalizer is added", pv(v1.VolumeAvailable, false, false), AddFinalizer, ReasonUnprotected},
		{"Bound PV without finalizer -> finalizer is added", pv(v1.VolumeBound, false, false), AddFinalizer, ReasonUnprotected},
		{"PV with finalizer -> nothing", pv(v1.VolumeBound, true, false), None, ReasonProtected},
		{"deleted PV without finalizer -> nothing", pv(v1.VolumeAvailable, false, true), None, ReasonFinalizerGone},
		{"deleted Bound PV -> kept", pv(v1.VolumeBound, true, true), Keep, ReasonBound},
		{"deleted Available PV -> finalizer is removed", pv(v1.VolumeAvailable, true, true), RemoveFinalizer, ReasonNotBound},
		{"deleted Released PV -> finalizer is removed", pv(v1.VolumeReleased, true, true), RemoveFinalizer, ReasonNotBound},
		{"deleted Pending PV -> finalizer is removed", pv(v1.VolumePending, true, true), RemoveFinalizer, ReasonNotBound},
		{"deleted Failed PV -> finalizer is removed", pv(v1.VolumeFailed, true, true), RemoveFinalizer, ReasonNotBound},
		{"deleted PV with no phase yet -> finalizer is removed", pv("", true, true), RemoveFinalizer, ReasonNotBound},
	}
	for _, tc := range cases {
		if d := DecideVolume(tc.pv); d.Action != tc.want || d.Reason != tc.reason {
			t.Errorf("%s: got %s, want %s: %s", tc.name, d, tc.want, tc.reason)
		}
	}
}
