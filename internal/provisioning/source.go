package provisioning

import (
	"fmt"
	"maps"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
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
		return r.Kind, r.Name, deref(r.APIGroup), deref(r.Namespace)
	}
	if r := claim.Spec.DataSource; r != nil {
		return r.Kind, r.Name, deref(r.APIGroup), ""
	}
	return "", "", "", ""
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func qualified(kind, group string) string {
	if group == "" {
		return kind
	}
	return kind + "." + group
}
