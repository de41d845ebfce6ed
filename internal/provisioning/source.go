package provisioning

import (
	"errors"
	"fmt"
	"maps"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/binding"
)

// NarrowedTo asks for exactly the endpoint's segment.
func NarrowedTo(e Endpoint) *csipb.TopologyRequirement {
	return &csipb.TopologyRequirement{
		Requisite: []*csipb.Topology{{Segments: maps.Clone(e.Topology)}},
		Preferred: []*csipb.Topology{{Segments: maps.Clone(e.Topology)}},
	}
}

// Clonable says why the claim's data source is not a claim this provisioner
// clones from, nil if it is: only a PersistentVolumeClaim of the claim's
// own namespace.
func Clonable(claim *v1.PersistentVolumeClaim) error {
	kind, name, group, ns := DataSource(claim)
	switch {
	case kind != persistentVolumeClaimKind || group != "":
		return Final(fmt.Errorf("data source %s %q is not supported: only PersistentVolumeClaim", qualified(kind, group), name))
	case ns != "" && ns != claim.Namespace:
		return Final(fmt.Errorf("data source claim %s/%s is in another namespace", ns, name))
	}
	return nil
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

// CloneRefusal says why the claim's data source cannot be cloned by
// driver whatever its state, nil if it may be: it must be Clonable, and
// the driver must have CLONE_VOLUME. Both are final.
func CloneRefusal(claim *v1.PersistentVolumeClaim, driver Driver) error {
	if err := Clonable(claim); err != nil {
		return err
	}
	if !driver.Clone {
		return Final(fmt.Errorf("driver %s cannot clone volumes (no CLONE_VOLUME capability)", driver.Name))
	}
	return nil
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
