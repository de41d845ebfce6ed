package binding_test

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/volplane/volplane/internal/binding"
)

func TestTimeDeletionOnlyOfDeletePolicyVolumesHandedOff(t *testing.T) {
	policy := func(p v1.PersistentVolumeReclaimPolicy) *v1.PersistentVolume {
		pv := newPV("pv1", "1Gi")
		pv.Spec.PersistentVolumeReclaimPolicy = p
		return pv
	}
	del, retain := policy(v1.PersistentVolumeReclaimDelete), policy(v1.PersistentVolumeReclaimRetain)
	for _, c := range []struct {
		name string
		pv   *v1.PersistentVolume
		d    binding.VolumeDecision
		want binding.DeletionTiming
	}{
		{"external deleter", del, binding.VolumeDecision{Reclaim: binding.ReclaimExternal}, binding.DeletionByProvisioner},
		{"no deleter, released", del, binding.VolumeDecision{Reclaim: binding.ReclaimFailed, Phase: v1.VolumeReleased}, binding.DeletionNoDeleter},
		{"no deleter, failed", del, binding.VolumeDecision{Reclaim: binding.ReclaimFailed, Phase: v1.VolumeFailed}, binding.DeletionNoDeleterFailed},
		{"migrated", del, binding.VolumeDecision{Reclaim: binding.ReclaimMigrated}, binding.DeletionUntimed},
		{"retained", retain, binding.VolumeDecision{Reclaim: binding.ReclaimExternal}, binding.DeletionUntimed},
	} {
		if got := binding.TimeDeletion(c.pv, c.d); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
