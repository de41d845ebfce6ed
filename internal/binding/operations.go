package binding

import v1 "k8s.io/api/core/v1"

// DeletionTiming is what a volume decision does to the timing of its
// volume's deletion (volume_operation_total_seconds, operation "delete"),
// which runs, as the reference's does, from the release of a Delete-policy
// volume until the PV is gone.
type DeletionTiming int

const (
	// DeletionUntimed: nothing to start.
	DeletionUntimed DeletionTiming = iota
	// DeletionByProvisioner: start timing, plugin_name the provisioner of
	// the volume's class ("N/A" without one). Not the provisioned-by
	// annotation: its values would make the series explode.
	DeletionByProvisioner
	// DeletionNoDeleter: no one here can delete the volume; start timing
	// under plugin_name "N/A".
	DeletionNoDeleter
	// DeletionNoDeleterFailed: as DeletionNoDeleter, and the volume went
	// Failed: count an error too.
	DeletionNoDeleterFailed
)

func (t DeletionTiming) String() string {
	return [...]string{"Untimed", "ByProvisioner", "NoDeleter", "NoDeleterFailed"}[t]
}

// TimeDeletion says how the decision d of a volume sync over pv bears on
// its deletion's timing. A migrated volume is not timed: the reference's
// reclaimVolume stands down before it starts the timer.
func TimeDeletion(pv *v1.PersistentVolume, d VolumeDecision) DeletionTiming {
	if pv.Spec.PersistentVolumeReclaimPolicy != v1.PersistentVolumeReclaimDelete {
		return DeletionUntimed
	}
	switch {
	case d.Reclaim == ReclaimExternal:
		return DeletionByProvisioner
	case d.Reclaim == ReclaimFailed && d.Phase == v1.VolumeFailed:
		return DeletionNoDeleterFailed
	case d.Reclaim == ReclaimFailed:
		return DeletionNoDeleter
	}
	return DeletionUntimed
}
