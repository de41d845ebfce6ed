package binder

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/internal/binding"
)

// The reference's reclaimVolume stands down for a migrated volume before it
// starts timing a deletion: its CSI driver's provisioner deletes it, and no
// volume_operation_total_seconds{operation_name="delete"} is observed here.
func TestReleasedMigratedVolumeIsNotTimedAsADeletion(t *testing.T) {
	o, _ := testOperations(t)
	c := &Controller{ops: o}
	pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv1"},
		Spec: v1.PersistentVolumeSpec{PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimDelete}}
	c.volumeReclaimed(pv, binding.VolumeDecision{Phase: v1.VolumeReleased, Reclaim: binding.ReclaimMigrated})
	if len(o.running) != 0 {
		t.Errorf("operations timed: %v, want none", o.running)
	}
}
