package provisioner

import (
	"errors"
	"slices"

	"github.com/volplane/volplane/internal/csierror"

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
	// claimPopulator: the claim wants a volume filled by a populator (its
	// data source is neither a claim nor a snapshot): say so and leave it
	// to the populator, changing nothing.
	claimPopulator
	// claimRace: in node deployment, an unassigned Immediate claim this
	// node can serve: try to become its owner (node.go).
	claimRace
)

func (a claimAction) String() string {
	return [...]string{"none", "provision", "finish", "cleanup", "populator", "race"}[a]
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
	case wantsProvisioning(f) && populatorKind(c) != "":
		return claimPopulator
	case wantsProvisioning(f):
		return claimProvision
	}
	return claimNone
}

// populatorKind is the kind of the claim's data source if a populator is
// to fill the volume, "" otherwise. As the external-provisioner's
// dataSource() and prepareProvision: dataSource wins over dataSourceRef, and
// only the kind counts; every kind but VolumeSnapshot and
// PersistentVolumeClaim is a populator's.
func populatorKind(c *v1.PersistentVolumeClaim) string {
	var kind string
	switch {
	case c.Spec.DataSource != nil:
		kind = c.Spec.DataSource.Kind
	case c.Spec.DataSourceRef != nil:
		kind = c.Spec.DataSourceRef.Kind
	}
	if kind == volumeSnapshotKind || kind == persistentVolumeClaimKind {
		return ""
	}
	return kind
}

// refusal says why a claim cannot be provisioned whatever the class, node
// or driver, nil if it can. Like the reference's, the error is retried
// with backoff and asks for no other node: none would help.
func refusal(c *v1.PersistentVolumeClaim) error {
	if c.Spec.Selector != nil {
		return errors.New("claim Selector is not supported")
	}
	return nil
}

// failureOutcome is what a failed provisioning attempt changes on the
// claim besides the event: unpin drops the in-progress finalizer and the
// endpoint pin (nothing can exist), reschedule removes the selected node
// so the scheduler chooses again.
type failureOutcome struct{ unpin, reschedule bool }

// beforeCreate is the outcome of an error before CreateVolume: an earlier
// attempt may have made a volume, so nothing is unpinned. A final error
// (the class, the request or the node cannot work) on a selected node asks
// the scheduler to choose again.
func beforeCreate(err error, c *v1.PersistentVolumeClaim) failureOutcome {
	return failureOutcome{reschedule: isFinal(err) && c.Annotations[volumehelpers.AnnSelectedNode] != ""}
}

// afterCreate is the outcome of the driver's answer to CreateVolume
// (a ResourceExhausted one already confirmed, see create). As the
// external-provisioner's checkError: an answer that may still be running
// changes nothing; ResourceExhausted reschedules only if the driver has
// topology and a node was selected (otherwise the same request is retried);
// any other final answer means nothing was made.
func afterCreate(err error, c *v1.PersistentVolumeClaim, topology bool) failureOutcome {
	selected := c.Annotations[volumehelpers.AnnSelectedNode] != ""
	switch {
	case csierror.OutOfRoom(err):
		return failureOutcome{unpin: true, reschedule: topology && selected}
	case csierror.Final(err):
		return failureOutcome{unpin: true, reschedule: selected}
	}
	return failureOutcome{}
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
	// volumeFinalize: a Bound PV of ours under Delete lacks our finalizer
	// (its policy was Retain, then Delete again): put it back, or a
	// delete of the PV would leave the backend volume behind.
	volumeFinalize
)

func (a volumeAction) String() string {
	return [...]string{"none", "delete", "unfinalize", "finalize"}[a]
}

// decideVolume decides a PV sync for the PVs we provisioned (volumeDriver).
// As the external-provisioner's handleProtectionFinalizer, our finalizer
// is on such a PV exactly while its policy is Delete: it goes under Retain
// (and Recycle), and comes back on a Bound PV under Delete that is not
// being deleted (a Released one is deleted anyway, finalizer or not).
func decideVolume(pv *v1.PersistentVolume, serves func(string) bool) volumeAction {
	if volumeDriver(pv, serves) == "" {
		return volumeNone
	}
	ours := hasFinalizer(pv.Finalizers, VolumeFinalizer)
	switch pv.Spec.PersistentVolumeReclaimPolicy {
	case v1.PersistentVolumeReclaimRetain, v1.PersistentVolumeReclaimRecycle:
		if ours {
			return volumeUnfinalize
		}
	case v1.PersistentVolumeReclaimDelete:
		switch {
		case pv.Status.Phase == v1.VolumeReleased && (pv.DeletionTimestamp == nil || ours):
			return volumeDelete
		case pv.Status.Phase == v1.VolumeBound && pv.DeletionTimestamp == nil && !ours:
			return volumeFinalize
		}
	}
	return volumeNone
}
