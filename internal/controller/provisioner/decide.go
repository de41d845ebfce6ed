package provisioner

import (
	"slices"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	volumehelpers "k8s.io/component-helpers/storage/volume"
)

// claimAction is what a claim sync decided.
type claimAction int

const (
	claimNone claimAction = iota
	// claimProvision: create the backend volume and the PV.
	claimProvision
	// claimFinish: the PV exists; drop the in-progress finalizer.
	claimFinish
	// claimCleanup: the claim no longer wants the volume a previous attempt
	// may have made; make sure it is deleted, then drop the finalizer.
	claimCleanup
)

func (a claimAction) String() string {
	return [...]string{"none", "provision", "finish", "cleanup"}[a]
}

// claimFacts is what decideClaim needs, read by the sync.
type claimFacts struct {
	claim *v1.PersistentVolumeClaim
	// class is the claim's class, nil if it does not exist.
	class *storagev1.StorageClass
	// pvExists: a PV named pvc-<claim UID> exists.
	pvExists bool
	// serves says whether we serve a driver name.
	serves func(driver string) bool
}

// claimDriver is the driver the binder handed the claim to ("" if none).
func claimDriver(claim *v1.PersistentVolumeClaim) string {
	if d := claim.Annotations[volumehelpers.AnnStorageProvisioner]; d != "" {
		return d
	}
	return claim.Annotations[volumehelpers.AnnBetaStorageProvisioner]
}

func hasFinalizer(finalizers []string, f string) bool { return slices.Contains(finalizers, f) }

// decideClaim decides a claim sync.
func decideClaim(f claimFacts) claimAction {
	c := f.claim
	inProgress := hasFinalizer(c.Finalizers, ClaimFinalizer)
	switch {
	case inProgress && f.pvExists:
		return claimFinish
	case inProgress && (c.DeletionTimestamp != nil || boundElsewhere(c)):
		return claimCleanup
	case c.DeletionTimestamp != nil || f.pvExists:
		return claimNone
	case wantsProvisioning(f):
		return claimProvision
	}
	return claimNone
}

// boundElsewhere: the claim got a volume other than the one we make for it.
func boundElsewhere(c *v1.PersistentVolumeClaim) bool {
	return c.Spec.VolumeName != "" && c.Spec.VolumeName != volumeName(c)
}

// wantsProvisioning: a Pending claim without a volume, handed to a driver we
// serve whose class exists and names that driver (or the in-tree plugin
// migrated to it); for WaitForFirstConsumer only once the scheduler selected
// a node.
func wantsProvisioning(f claimFacts) bool {
	c := f.claim
	driver := claimDriver(c)
	switch {
	case c.Status.Phase != v1.ClaimPending && c.Status.Phase != "":
		return false
	case c.Spec.VolumeName != "" || driver == "" || !f.serves(driver):
		return false
	case f.class == nil || !provisionsFor(f.class, driver):
		return false
	}
	wait := f.class.VolumeBindingMode != nil && *f.class.VolumeBindingMode == storagev1.VolumeBindingWaitForFirstConsumer
	return !wait || c.Annotations[volumehelpers.AnnSelectedNode] != ""
}

// volumeAction is what a PV sync decided.
type volumeAction int

const (
	volumeNone volumeAction = iota
	// volumeDelete: delete the backend volume, the PV, then our finalizer.
	volumeDelete
	// volumeUnfinalize: a Retain PV needs no finalizer of ours.
	volumeUnfinalize
)

func (a volumeAction) String() string {
	return [...]string{"none", "delete", "unfinalize"}[a]
}

// decideVolume decides a PV sync for the PVs we provisioned (volumeDriver).
func decideVolume(pv *v1.PersistentVolume, serves func(string) bool) volumeAction {
	if volumeDriver(pv, serves) == "" {
		return volumeNone
	}
	ours := hasFinalizer(pv.Finalizers, VolumeFinalizer)
	switch pv.Spec.PersistentVolumeReclaimPolicy {
	case v1.PersistentVolumeReclaimRetain:
		if ours {
			return volumeUnfinalize
		}
	case v1.PersistentVolumeReclaimDelete:
		if pv.Status.Phase == v1.VolumeReleased && (pv.DeletionTimestamp == nil || ours) {
			return volumeDelete
		}
	}
	return volumeNone
}
