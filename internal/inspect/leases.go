package inspect

import (
	"context"
	"fmt"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"

	"github.com/volplane/volplane/internal/heartbeat"
)

// HeartbeatLeases reads, across namespaces, the Leases Find needs for provisioner:
// its heartbeats (by heartbeat.Selector) and any Lease named
// heartbeat.SidecarLeaseName.
// RBAC: list leases in all namespaces.
func HeartbeatLeases(ctx context.Context, leases coordinationv1client.LeasesGetter, provisioner string) ([]coordinationv1.Lease, error) {
	return RoleLeases(ctx, leases, heartbeat.Provisioner, provisioner)
}

// RoleLeases reads, across namespaces, the Leases role.Find needs for
// driver: the role's heartbeats (by role.Selector) and any Lease named
// role.SidecarLeaseName (the upstream sidecar's leader election).
// RBAC: list leases in all namespaces.
func RoleLeases(ctx context.Context, leases coordinationv1client.LeasesGetter, role heartbeat.Role, driver string) ([]coordinationv1.Lease, error) {
	all := leases.Leases(metav1.NamespaceAll)
	ours, err := all.List(ctx, metav1.ListOptions{LabelSelector: role.Selector(driver)})
	if err != nil {
		return nil, fmt.Errorf("list %s heartbeat leases of %s: %w", role, driver, err)
	}
	out := ours.Items
	if name := role.SidecarLeaseName(driver); name != "" {
		sidecar, err := all.List(ctx, metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", name).String()})
		if err != nil {
			return nil, fmt.Errorf("list %s leader election leases of %s: %w", role.Sidecar(), driver, err)
		}
		out = append(out, sidecar.Items...)
	}
	return out, nil
}
