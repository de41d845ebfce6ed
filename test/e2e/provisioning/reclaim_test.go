package provisioning

import (
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Deleting the claim of a Delete class releases its PV; the provisioner
// deletes the backend volume, then the PV, and removes the PV's finalizer.
func TestDeletedClaimOfDeleteClassTakesVolumeAndPVAlong(t *testing.T) {
	e := newEnv(t)
	_, pv, _ := e.provisioned("data", classImmediate)

	e.deleteClaim("data")
	e.waitClaimGone("data")
	e.waitPVDeleted(pv.Name)
	e.eventually("backend volume deleted", func() string {
		if vols := e.newVolumes(); len(vols) > 0 {
			return fmt.Sprintf("still there: %v", vols)
		}
		return ""
	})
}

// Deleting the claim of a Retain class releases its PV and nothing more:
// the PV stays Released and the backend volume keeps its data.
func TestDeletedClaimOfRetainClassKeepsVolumeAndPV(t *testing.T) {
	e := newEnv(t)
	c, pv, vol := e.provisioned("data", classRetain)
	e.expectProvisionedPV(pv, c, vol, corev1.PersistentVolumeReclaimRetain)

	e.deleteClaim("data")
	e.waitClaimGone("data")
	keptReleased := func() string {
		pv := e.findPV(pv.Name)
		switch {
		case pv == nil:
			return "PV deleted"
		case pv.DeletionTimestamp != nil:
			return "PV being deleted"
		case pv.Status.Phase != corev1.VolumeReleased:
			return "PV phase " + string(pv.Status.Phase)
		}
		if vols := e.newVolumes(); len(vols) != 1 || vols[0] != vol {
			return fmt.Sprintf("backend volumes %v, want only %s", vols, vol)
		}
		return ""
	}
	e.eventually("PV Released", keptReleased)
	e.holds("PV and backend volume kept", 3*time.Second, keptReleased)
}
