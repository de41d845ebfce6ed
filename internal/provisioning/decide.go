package provisioning

import (
	"errors"
	"slices"

	"github.com/volplane/volplane/internal/csierror"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	volumehelpers "k8s.io/component-helpers/storage/volume"
)

// ClaimAction is what a claim sync decided.
type ClaimAction int

const (
	ClaimNone ClaimAction = iota
	// ClaimProvision: create the backend volume and the PV.
	ClaimProvision
	// ClaimFinish: the PV exists; drop the in-progress finalizer.
	ClaimFinish
	// ClaimCleanup: the claim no longer wants the volume a previous attempt
	// may have made; make sure it is deleted, then drop the finalizer.
	ClaimCleanup
	// ClaimPopulator: the claim wants a volume filled by a populator (its
	// data source is neither a claim nor a snapshot): say so and leave it
	// to the populator, changing nothing.
	ClaimPopulator
	// ClaimRace: in node deployment, an unassigned Immediate claim this
	// node can serve: try to become its owner (Gated).
	ClaimRace
)

func (a ClaimAction) String() string {
	return [...]string{"none", "provision", "finish", "cleanup", "populator", "race"}[a]
}

// ClaimDriver is the driver the binder handed the claim to ("" if none).
func ClaimDriver(claim *v1.PersistentVolumeClaim) string {
	if d := claim.Annotations[volumehelpers.AnnStorageProvisioner]; d != "" {
		return d
	}
	return claim.Annotations[volumehelpers.AnnBetaStorageProvisioner]
}

// DecideClaim decides a claim sync.
func DecideClaim(f ClaimFacts) ClaimAction {
	c := f.Claim
	inProgress := slices.Contains(c.Finalizers, ClaimFinalizer)
	switch {
	case inProgress && f.PVExists:
		return ClaimFinish
	case inProgress && (c.DeletionTimestamp != nil || boundElsewhere(c)):
		return ClaimCleanup
	case c.DeletionTimestamp != nil || f.PVExists:
		return ClaimNone
	case wantsProvisioning(f) && PopulatorKind(c) != "":
		return ClaimPopulator
	case wantsProvisioning(f):
		return ClaimProvision
	}
	return ClaimNone
}

// PopulatorKind is the kind of the claim's data source if a populator is
// to fill the volume, "" otherwise. As the external-provisioner's
// dataSource() and prepareProvision: dataSource wins over dataSourceRef, and
// only the kind counts; every kind but VolumeSnapshot and
// PersistentVolumeClaim is a populator's.
func PopulatorKind(c *v1.PersistentVolumeClaim) string {
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

// Refusal says why a claim cannot be provisioned whatever the class, node
// or driver, nil if it can. Like the reference's, the error is retried
// with backoff and asks for no other node: none would help.
func Refusal(c *v1.PersistentVolumeClaim) error {
	if c.Spec.Selector != nil {
		return errors.New("claim Selector is not supported")
	}
	return nil
}

// FailureOutcome is what a failed provisioning attempt changes on the
// claim besides the event: Unpin drops the in-progress finalizer and the
// endpoint pin (nothing can exist), Reschedule removes the selected node
// so the scheduler chooses again.
type FailureOutcome struct{ Unpin, Reschedule bool }

// BeforeCreate is the outcome of an error before CreateVolume: an earlier
// attempt may have made a volume, so nothing is unpinned. A final error
// (the class, the request or the node cannot work) on a selected node asks
// the scheduler to choose again.
func BeforeCreate(err error, c *v1.PersistentVolumeClaim) FailureOutcome {
	return FailureOutcome{Reschedule: IsFinal(err) && c.Annotations[volumehelpers.AnnSelectedNode] != ""}
}

// AfterCreate is the outcome of the driver's answer to CreateVolume
// (a ResourceExhausted one already confirmed, see create). As the
// external-provisioner's checkError: an answer that may still be running
// changes nothing; ResourceExhausted reschedules only if the driver has
// topology and a node was selected (otherwise the same request is retried);
// any other final answer means nothing was made.
func AfterCreate(err error, c *v1.PersistentVolumeClaim, topology bool) FailureOutcome {
	selected := c.Annotations[volumehelpers.AnnSelectedNode] != ""
	switch {
	case csierror.OutOfRoom(err):
		return FailureOutcome{Unpin: true, Reschedule: topology && selected}
	case csierror.Final(err):
		return FailureOutcome{Unpin: true, Reschedule: selected}
	}
	return FailureOutcome{}
}

// boundElsewhere: the claim got a volume other than the one we make for it.
func boundElsewhere(c *v1.PersistentVolumeClaim) bool {
	return c.Spec.VolumeName != "" && c.Spec.VolumeName != VolumeName(c)
}

// wantsProvisioning: a Pending claim without a volume, handed to a driver we
// serve whose class exists and names that driver (or the in-tree plugin
// migrated to it); for WaitForFirstConsumer only once the scheduler selected
// a node.
func wantsProvisioning(f ClaimFacts) bool {
	c := f.Claim
	driver := ClaimDriver(c)
	switch {
	case c.Status.Phase != v1.ClaimPending && c.Status.Phase != "":
		return false
	case c.Spec.VolumeName != "" || driver == "" || !f.Serves(driver):
		return false
	case f.Class == nil || !ProvisionsFor(f.Class, driver):
		return false
	}
	wait := f.Class.VolumeBindingMode != nil && *f.Class.VolumeBindingMode == storagev1.VolumeBindingWaitForFirstConsumer
	return !wait || c.Annotations[volumehelpers.AnnSelectedNode] != ""
}

// VolumeAction is what a PV sync decided.
type VolumeAction int

const (
	VolumeNone VolumeAction = iota
	// VolumeDelete: delete the backend volume, then our finalizer, then the PV.
	VolumeDelete
	// VolumeUnfinalize: a Retain PV needs no finalizer of ours.
	VolumeUnfinalize
	// VolumeFinalize: a Bound PV of ours under Delete lacks our finalizer
	// (its policy was Retain, then Delete again): put it back, or a
	// delete of the PV would leave the backend volume behind.
	VolumeFinalize
)

func (a VolumeAction) String() string {
	return [...]string{"none", "delete", "unfinalize", "finalize"}[a]
}

// DecideVolume decides a PV sync for the PVs we provisioned (VolumeDriver).
// As the external-provisioner's handleProtectionFinalizer, our finalizer
// is on such a PV exactly while its policy is Delete: it goes under Retain
// (and Recycle), and comes back on a Bound PV under Delete that is not
// being deleted (a Released one is deleted anyway, finalizer or not).
func DecideVolume(pv *v1.PersistentVolume, serves func(string) bool) VolumeAction {
	if VolumeDriver(pv, serves) == "" {
		return VolumeNone
	}
	ours := slices.Contains(pv.Finalizers, VolumeFinalizer)
	switch pv.Spec.PersistentVolumeReclaimPolicy {
	case v1.PersistentVolumeReclaimRetain, v1.PersistentVolumeReclaimRecycle:
		if ours {
			return VolumeUnfinalize
		}
	case v1.PersistentVolumeReclaimDelete:
		switch {
		case pv.Status.Phase == v1.VolumeReleased && (pv.DeletionTimestamp == nil || ours):
			return VolumeDelete
		case pv.Status.Phase == v1.VolumeBound && pv.DeletionTimestamp == nil && !ours:
			return VolumeFinalize
		}
	}
	return VolumeNone
}

// Gated is what a node does of what DecideClaim decided: all of it on its
// own claims, a race for one nobody owns yet, nothing on another node's.
func Gated(a ClaimAction, t Turn) ClaimAction {
	switch {
	case t == Handle:
		return a
	case t == Race && (a == ClaimProvision || a == ClaimPopulator):
		return ClaimRace
	}
	return ClaimNone
}

// AfterFailure is the claim as a failed attempt's outcome leaves it: the
// selected node gone if the outcome reschedules, the in-progress marks
// gone if it unpins. nil if that changes nothing; claim itself is not
// modified.
func AfterFailure(claim *v1.PersistentVolumeClaim, out FailureOutcome) *v1.PersistentVolumeClaim {
	_, selected := claim.Annotations[volumehelpers.AnnSelectedNode]
	reschedule := selected && out.Reschedule
	unpin := out.Unpin && MarkedInProgress(claim)
	if !reschedule && !unpin {
		return nil
	}
	upd := claim.DeepCopy()
	if reschedule {
		delete(upd.Annotations, volumehelpers.AnnSelectedNode)
	}
	if unpin {
		Unpin(upd)
	}
	return upd
}
