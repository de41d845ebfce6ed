package provisioning

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/binding"
	"github.com/volplane/volplane/internal/snapshotapi"
)

// NarrowedTo asks for exactly the endpoint's segment.
func NarrowedTo(e Endpoint) *csipb.TopologyRequirement {
	return &csipb.TopologyRequirement{
		Requisite: []*csipb.Topology{{Segments: maps.Clone(e.Topology)}},
		Preferred: []*csipb.Topology{{Segments: maps.Clone(e.Topology)}},
	}
}

// SourceKind is what a claim's data source asks of the provisioner.
type SourceKind int

const (
	// NoSource: an empty volume.
	NoSource SourceKind = iota
	// CloneSource: a copy of another claim's volume.
	CloneSource
	// SnapshotSource: a volume restored from a VolumeSnapshot.
	SnapshotSource
)

// ClaimSource says what the claim's data source is to this provisioner,
// and its name: a claim of the claim's own namespace to clone, or a
// VolumeSnapshot (group snapshot.storage.k8s.io) of that namespace to
// restore. Anything else is a final error: another kind (a populator's
// kind never gets here, see PopulatorKind), a VolumeSnapshot of another
// API group, or a dataSourceRef naming another namespace. volplane does
// not implement the CrossNamespaceVolumeDataSource gate (alpha, off by
// default, and off in the embedded API server, which then drops the
// field): a reference into another namespace is refused as the
// external-provisioner refuses it with the gate off, whatever a
// ReferenceGrant says, so no tenant's claim reads another's data.
func ClaimSource(claim *v1.PersistentVolumeClaim) (SourceKind, string, error) {
	kind, name, group, ns := DataSource(claim)
	switch {
	case kind == "":
		return NoSource, "", nil
	case ns != "" && ns != claim.Namespace:
		return NoSource, name, Final(errors.New("dataSourceRef namespace specified but the CrossNamespaceVolumeDataSource feature is disabled"))
	case kind == persistentVolumeClaimKind && group == "":
		return CloneSource, name, nil
	case kind == volumeSnapshotKind && group == snapshotapi.Group:
		return SnapshotSource, name, nil
	case kind == volumeSnapshotKind:
		return NoSource, name, Final(fmt.Errorf("the PVC source does not belong to the right APIGroup. Expected %s, Got %s", snapshotapi.Group, group))
	}
	return NoSource, name, Final(fmt.Errorf("data source %s %q is not supported: only PersistentVolumeClaim and VolumeSnapshot", qualified(kind, group), name))
}

// DataSource prefers dataSourceRef, which may name a namespace.
func DataSource(claim *v1.PersistentVolumeClaim) (kind, name, group, ns string) {
	if r := claim.Spec.DataSourceRef; r != nil {
		return r.Kind, r.Name, ptr.Deref(r.APIGroup, ""), ptr.Deref(r.Namespace, "")
	}
	if r := claim.Spec.DataSource; r != nil {
		return r.Kind, r.Name, ptr.Deref(r.APIGroup, ""), ""
	}
	return "", "", "", ""
}

func qualified(kind, group string) string {
	if group == "" {
		return kind
	}
	return kind + "." + group
}

// SourceRefusal says why the claim's data source cannot be used by driver
// whatever its state, nil if it may be: it must be a ClaimSource, and the
// driver must have CLONE_VOLUME for a clone, CREATE_DELETE_SNAPSHOT for a
// restore (the external-provisioner's checkDriverCapabilities). All are
// final.
func SourceRefusal(claim *v1.PersistentVolumeClaim, driver Driver) (SourceKind, string, error) {
	kind, name, err := ClaimSource(claim)
	switch {
	case err != nil:
		return kind, name, err
	case kind == CloneSource && !driver.Clone:
		return kind, name, Final(fmt.Errorf("driver %s cannot clone volumes (no CLONE_VOLUME capability)", driver.Name))
	case kind == SnapshotSource && !driver.Snapshot:
		return kind, name, Final(errors.New("CSI driver does not support snapshot restore: controller CREATE_DELETE_SNAPSHOT capability is not reported"))
	}
	return kind, name, nil
}

// SourceClaimProblem says why src, the claim's data source claim, gives
// no volume to clone (yet), nil if it may: it must be of the claim's class
// (final otherwise) and Bound to a volume.
func SourceClaimProblem(claim, src *v1.PersistentVolumeClaim) error {
	switch {
	case binding.ClaimClass(src) != binding.ClaimClass(claim):
		return Final(fmt.Errorf("data source claim %q has class %q, not %q", src.Name, binding.ClaimClass(src), binding.ClaimClass(claim)))
	case src.Status.Phase != v1.ClaimBound || src.Spec.VolumeName == "":
		return fmt.Errorf("data source claim %q is not bound yet", src.Name)
	}
	return nil
}

// SourceClaimDeleting refuses, as the external-provisioner does, a clone
// from a source claim being deleted, unless this claim's clone started
// before (the source holds CloningFinalizer and the claim its in-progress
// marks): a finalizer cannot be added to an object being deleted, and a
// clone begun must be finished or cleaned up.
func SourceClaimDeleting(claim, src *v1.PersistentVolumeClaim) error {
	if src.DeletionTimestamp == nil || (slices.Contains(src.Finalizers, snapshotapi.CloningFinalizer) && MarkedInProgress(claim)) {
		return nil
	}
	return fmt.Errorf("the PVC DataSource %s is currently being deleted", src.Name)
}

// SourceVolumeProblem says why pv, the volume src names, is not src's own
// volume of driver, nil if it is: pv must be bound back to src (its
// claimRef names src's namespace, name and UID) and be driver's (final
// otherwise). A claim's spec.volumeName alone is what its user wrote (a
// pre-bind to another tenant's volume, a bind not completed); the PV says
// whose volume it is.
func SourceVolumeProblem(src *v1.PersistentVolumeClaim, pv *v1.PersistentVolume, driver string) error {
	if ref := pv.Spec.ClaimRef; ref == nil || ref.UID != src.UID || ref.Namespace != src.Namespace || ref.Name != src.Name {
		return fmt.Errorf("volume %q of data source claim %q is not bound to it", pv.Name, src.Name)
	}
	if pv.Spec.CSI == nil || pv.Spec.CSI.Driver != driver {
		return Final(errors.New("data source claim " + src.Name + " is not a volume of driver " + driver))
	}
	return nil
}
