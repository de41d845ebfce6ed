package provisioning

import (
	"fmt"
	"slices"
	"strconv"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/volplane/volplane/internal/quantity"
	"github.com/volplane/volplane/internal/snapshotapi"
)

// Restore from a VolumeSnapshot, as the external-provisioner's
// getSnapshotSource checks it, with its messages. The loop reads the
// snapshot and its content live from the API server (not an informer's
// copy, as the reference does) and asks here.

// SnapshotRead is what the loop read of the claim's data source snapshot:
// the snapshot (nil with SnapshotErr), and, for a snapshot bound to a
// content, that content (nil with ContentErr).
type SnapshotRead struct {
	Name        string
	Snapshot    *snapv1.VolumeSnapshot
	SnapshotErr error
	Content     *snapv1.VolumeSnapshotContent
	ContentErr  error
}

// BoundContent is the name of the content the snapshot says it is bound
// to, "" if none.
func BoundContent(s *snapv1.VolumeSnapshot) string {
	if s == nil || s.Status == nil || s.Status.BoundVolumeSnapshotContentName == nil {
		return ""
	}
	return *s.Status.BoundVolumeSnapshotContentName
}

// SnapshotHandle is the backend snapshot the claim's data source names,
// checked both ways: the snapshot is bound to a content, the content's
// volumeSnapshotRef points back to it (namespace, name and UID: a
// snapshot's status is no proof, a content is an administrator's or the
// snapshot-controller's object), the content is of the class's driver and
// has a snapshot handle. Every restore, and every record naming a
// snapshot, is derived from this, never from what a claim says.
func SnapshotHandle(r SnapshotRead, class, driver string) (string, error) {
	if r.SnapshotErr != nil {
		return "", fmt.Errorf("error getting snapshot %s from api server: %v", r.Name, r.SnapshotErr)
	}
	s := r.Snapshot
	bound := BoundContent(s)
	if bound == "" {
		return "", fmt.Errorf("snapshot %s not bound", r.Name)
	}
	if r.ContentErr != nil || r.Content == nil {
		return "", fmt.Errorf("error getting snapshotcontent %s for snapshot %s", bound, r.Name)
	}
	c := r.Content
	if ref := c.Spec.VolumeSnapshotRef; ref.UID != s.UID || ref.Namespace != s.Namespace || ref.Name != s.Name {
		return "", Final(fmt.Errorf("snapshotcontent %s for snapshot %s is bound to a different snapshot", bound, r.Name))
	}
	if c.Spec.Driver != driver {
		return "", Final(fmt.Errorf("snapshotcontent %s for snapshot %s is not handled by CSI driver of StorageClass %s", bound, r.Name, class))
	}
	if c.Status == nil || c.Status.SnapshotHandle == nil || *c.Status.SnapshotHandle == "" {
		return "", fmt.Errorf("snapshot handle %s is not available", r.Name)
	}
	return *c.Status.SnapshotHandle, nil
}

// RestoreSource is the content source of a claim restoring from r, with
// every check of the reference in its order: the snapshot not being
// deleted (unless a restore of this very claim started before and holds
// it: ProvisionerSourceFinalizer on the snapshot and the claim marked in
// progress), SnapshotHandle, ready to use, a request no smaller than the
// restore size (larger is the driver's to grow), and the same volume mode
// unless the content allows a change.
func RestoreSource(claim *v1.PersistentVolumeClaim, r SnapshotRead, class, driver string) (*csipb.VolumeContentSource, error) {
	if r.SnapshotErr == nil && r.Snapshot.DeletionTimestamp != nil &&
		!(slices.Contains(r.Snapshot.Finalizers, snapshotapi.ProvisionerSourceFinalizer) && MarkedInProgress(claim)) {
		return nil, fmt.Errorf("snapshot %s is being deleted", r.Name)
	}
	handle, err := SnapshotHandle(r, class, driver)
	if err != nil {
		return nil, err
	}
	s, c := r.Snapshot, r.Content
	if s.Status.ReadyToUse == nil || !*s.Status.ReadyToUse {
		return nil, fmt.Errorf("snapshot %s is not Ready", r.Name)
	}
	if err := restoreSize(claim, s, c); err != nil {
		return nil, err
	}
	if err := volumeModeChange(claim, c); err != nil {
		return nil, err
	}
	return SnapshotContentSource(handle), nil
}

// SnapshotContentSource is the content source restoring snapshot handle.
func SnapshotContentSource(handle string) *csipb.VolumeContentSource {
	return &csipb.VolumeContentSource{Type: &csipb.VolumeContentSource_Snapshot{
		Snapshot: &csipb.VolumeContentSource_SnapshotSource{SnapshotId: handle}}}
}

// restoreSize refuses a request smaller than the snapshot: the larger of
// the snapshot's restoreSize and its content's (the content is the
// snapshotter's word; the snapshot's status mirrors it).
func restoreSize(claim *v1.PersistentVolumeClaim, s *snapv1.VolumeSnapshot, c *snapv1.VolumeSnapshotContent) error {
	var size int64
	known := false
	if s.Status.RestoreSize != nil {
		size, known = s.Status.RestoreSize.Value(), true
	}
	if c.Status != nil && c.Status.RestoreSize != nil && *c.Status.RestoreSize > size {
		size, known = *c.Status.RestoreSize, true
	}
	if !known {
		return nil
	}
	capacity, ok := claim.Spec.Resources.Requests[v1.ResourceStorage]
	if !ok {
		return Final(fmt.Errorf("error getting capacity for PVC %s when creating snapshot %s", claim.Name, s.Name))
	}
	want, ok := quantity.Bytes(capacity)
	if !ok {
		return Final(quantity.TooLarge(capacity))
	}
	if want < size {
		return Final(fmt.Errorf("requested volume size %d is less than the size %d for the source snapshot %s", want, size, s.Name))
	}
	return nil
}

// volumeModeChange refuses a claim of another volume mode than the
// snapshot's source volume unless the content (not the user's object)
// allows it with AllowVolumeModeChange "true".
func volumeModeChange(claim *v1.PersistentVolumeClaim, c *snapv1.VolumeSnapshotContent) error {
	from, to := c.Spec.SourceVolumeMode, claim.Spec.VolumeMode
	if from == nil || to == nil || *from == *to {
		return nil
	}
	prefix := fmt.Sprintf("requested volume %s/%s modifies the mode of the source volume but does not have permission to do so. ", claim.Namespace, claim.Name)
	allow, ok := c.Annotations[snapshotapi.AllowVolumeModeChange]
	if !ok {
		return Final(fmt.Errorf("%s%s annotation is not present on snapshotcontent %s", prefix, snapshotapi.AllowVolumeModeChange, c.Name))
	}
	yes, err := strconv.ParseBool(allow)
	if err != nil {
		return Final(fmt.Errorf("%sfailed to convert %s annotation value to boolean with error: %v", prefix, snapshotapi.AllowVolumeModeChange, err))
	}
	if !yes {
		return Final(fmt.Errorf("%s%s is set to false on snapshotcontent %s", prefix, snapshotapi.AllowVolumeModeChange, c.Name))
	}
	return nil
}

// SnapshotSourceHandle is the source volume handle a content was taken of
// ("" for a pre-provisioned content, which names only its snapshot): where
// that volume lives is where a node-local snapshot lives.
func SnapshotSourceHandle(c *snapv1.VolumeSnapshotContent) string {
	if c == nil || c.Spec.Source.VolumeHandle == nil {
		return ""
	}
	return *c.Spec.Source.VolumeHandle
}

// SnapshotHolder is the endpoint of eps that holds a node-local snapshot:
// the one whose ListSnapshots(snapshot_id) returned it (has[i]). None is
// an error retried later (the endpoint that has it may not be served
// yet); more than one is refused: a restore would not know which copy.
func SnapshotHolder(handle string, eps []Endpoint, has []bool) (int, error) {
	at := -1
	for i := range eps {
		if !has[i] {
			continue
		}
		if at >= 0 {
			return -1, Final(fmt.Errorf("snapshot %s is held by the endpoints of both %q and %q", handle, eps[at].NodeID, eps[i].NodeID))
		}
		at = i
	}
	if at < 0 {
		return -1, fmt.Errorf("no endpoint served now holds snapshot %s", handle)
	}
	return at, nil
}

// SegmentIs is a SourceAt that accepts exactly the segments within seg.
func SegmentIs(seg map[string]string) func(map[string]string) bool {
	return func(s map[string]string) bool { return within(seg, s) }
}

// Source protection. While a claim may be made from a source (its
// in-progress marks are on: a CreateVolume may be running, or may have
// made a volume the PV does not own yet), the source carries the
// provisioner's finalizer: ProvisionerSourceFinalizer on a VolumeSnapshot,
// CloningFinalizer on a claim. It is added before the first CreateVolume
// and removed before the restoring claim's marks go (its PV exists, the
// attempt failed for good, or the claim went away), so that a crash in
// between is finished by the next sync of that claim, which still has
// its marks.

// SourceFinalizer is the finalizer the provisioner puts on a source of
// kind while a claim is made from it ("" for NoSource).
func SourceFinalizer(kind SourceKind) string {
	switch kind {
	case CloneSource:
		return snapshotapi.CloningFinalizer
	case SnapshotSource:
		return snapshotapi.ProvisionerSourceFinalizer
	}
	return ""
}

// SourceHeld says whether a claim of claims (the source's namespace),
// other than except, is being made from the source kind/name: Pending,
// its in-progress finalizer on, and its data source that source. A
// Pending claim that no attempt is running for (refused before any
// CreateVolume, or failed for good, which drops the marks) holds nothing:
// it would hold the source forever (external-provisioner#1507).
func SourceHeld(claims []*v1.PersistentVolumeClaim, kind SourceKind, name string, except types.UID) bool {
	for _, c := range claims {
		if c.UID == except || !slices.Contains(c.Finalizers, ClaimFinalizer) || c.Status.Phase == v1.ClaimBound || c.Spec.VolumeName != "" {
			continue
		}
		if k, n, err := ClaimSource(c); err == nil && k == kind && n == name {
			return true
		}
	}
	return false
}
