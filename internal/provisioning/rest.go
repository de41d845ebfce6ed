package provisioning

import (
	"slices"

	v1 "k8s.io/api/core/v1"
)

// Objects at rest: those no decision of the provisioner can act on until
// they change themselves, whatever the classes, nodes, drivers and PVs
// around them. The loop's periodic resync looks only at the others (the
// handlers keep the set), so at 100,000 bound claims it no longer decides
// every claim and PV every period.

// ClaimAtRest: no in-progress finalizer, and bound or no longer Pending.
// DecideClaim then has nothing to finish or clean up, and
// wantsProvisioning is false before it reads any class or driver.
func ClaimAtRest(c *v1.PersistentVolumeClaim) bool {
	if slices.Contains(c.Finalizers, ClaimFinalizer) {
		return false
	}
	return c.Spec.VolumeName != "" || (c.Status.Phase != v1.ClaimPending && c.Status.Phase != "")
}

// VolumeAtRest: DecideVolume has nothing to do with it whichever drivers
// are served (a driver served later changes nothing).
func VolumeAtRest(pv *v1.PersistentVolume) bool {
	return DecideVolume(pv, func(string) bool { return true }) == VolumeNone
}
