package deploy

import (
	"maps"
	"slices"
	"testing"

	groupv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/volplane/volplane/internal/bundle"
	"github.com/volplane/volplane/internal/hostpath"
)

// The snapshot API's groups.
const (
	snapshotGroup      = "snapshot.storage.k8s.io"
	groupSnapshotGroup = "groupsnapshot.storage.k8s.io"
)

// allows says whether any of rules grants verb on resource of group.
func allows(rules []rbacv1.PolicyRule, group, resource, verb string) bool {
	return slices.ContainsFunc(rules, func(r rbacv1.PolicyRule) bool {
		return slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb)
	})
}

func clusterRole(t *testing.T, name string) *rbacv1.ClusterRole {
	t.Helper()
	return workload[*rbacv1.ClusterRole](t, objects(t), name)
}

// Tenants get VolumeSnapshots and VolumeGroupSnapshots through the
// built-in edit, admin and view roles (aggregation labels), the verbs of
// each and nothing else: no content, no class, no status, no wildcard.
func TestTenantsGetSnapshotsThroughEditAndViewOnly(t *testing.T) {
	type want struct {
		labels []string
		verbs  []string
	}
	roles := map[string]want{
		"volplane-snapshots-edit": {
			labels: []string{"rbac.authorization.k8s.io/aggregate-to-edit", "rbac.authorization.k8s.io/aggregate-to-admin"},
			verbs:  []string{"create", "delete", "get", "list", "watch", "update", "patch"},
		},
		"volplane-snapshots-view": {
			labels: []string{"rbac.authorization.k8s.io/aggregate-to-view"},
			verbs:  []string{"get", "list", "watch"},
		},
	}
	kinds := map[string]string{"volumesnapshots": snapshotGroup, "volumegroupsnapshots": groupSnapshotGroup}
	for name, w := range roles {
		r := clusterRole(t, name)
		for _, l := range w.labels {
			if r.Labels[l] != "true" {
				t.Errorf("%s: label %s=%q, want \"true\"", name, l, r.Labels[l])
			}
		}
		for resource, group := range kinds {
			for _, verb := range w.verbs {
				if !allows(r.Rules, group, resource, verb) {
					t.Errorf("%s does not grant %s %s.%s", name, verb, resource, group)
				}
			}
		}
		for _, rule := range r.Rules {
			for _, group := range rule.APIGroups {
				for _, resource := range rule.Resources {
					if kinds[resource] != group {
						t.Errorf("%s grants %s.%s to tenants: only volumesnapshots and volumegroupsnapshots", name, resource, group)
					}
				}
			}
			for _, verb := range rule.Verbs {
				if !slices.Contains(w.verbs, verb) {
					t.Errorf("%s grants %s, want only %v", name, verb, w.verbs)
				}
			}
			if len(rule.ResourceNames) > 0 || len(rule.NonResourceURLs) > 0 {
				t.Errorf("%s: rule %+v names resources or URLs", name, rule)
			}
		}
	}
}

// Only the central controller (the snapshot-controller's role) creates and
// deletes contents; the snapshotters beside the drivers, one escape from a
// node's pods for the node role, update the contents they serve and
// create and delete none, and write VolumeSnapshots only to hold one (the
// provisioner's finalizer, patch).
func TestOnlyTheControllerCreatesAndDeletesContents(t *testing.T) {
	for _, kind := range []struct{ group, resource string }{
		{snapshotGroup, "volumesnapshotcontents"}, {groupSnapshotGroup, "volumegroupsnapshotcontents"},
	} {
		for _, verb := range []string{"create", "delete"} {
			if !allows(clusterRole(t, "volplane-controller").Rules, kind.group, kind.resource, verb) {
				t.Errorf("volplane-controller may not %s %s", verb, kind.resource)
			}
			for _, name := range []string{"volplane-node", "volplane-csi-sidecar"} {
				if allows(clusterRole(t, name).Rules, kind.group, kind.resource, verb) {
					t.Errorf("%s may %s %s: only the central snapshot loop does", name, verb, kind.resource)
				}
			}
		}
	}
	for _, name := range []string{"volplane-node", "volplane-csi-sidecar"} {
		for _, verb := range []string{"create", "update", "delete"} {
			if allows(clusterRole(t, name).Rules, snapshotGroup, "volumesnapshots", verb) {
				t.Errorf("%s may %s VolumeSnapshots: a tenant's object, patched only for the provisioner's finalizer", name, verb)
			}
		}
	}
}

// The node-local driver's snapshot classes are those `volplane up`
// registers, field for field (the network driver's is up's alone).
func TestSnapshotClassesAreThoseUpRegisters(t *testing.T) {
	objs := objects(t)
	classes, groups := bundle.SnapshotClasses()
	var want []*snapv1.VolumeSnapshotClass
	for _, c := range classes {
		if c.Driver == hostpath.DriverName {
			want = append(want, c)
		}
	}
	got := Of[*snapv1.VolumeSnapshotClass](objs)
	if len(got) != len(want) {
		t.Fatalf("VolumeSnapshotClasses %v, want %v", names(got), names(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Name != w.Name || g.Driver != w.Driver || g.DeletionPolicy != w.DeletionPolicy ||
			!maps.Equal(g.Parameters, w.Parameters) || !maps.Equal(g.Annotations, w.Annotations) {
			t.Errorf("VolumeSnapshotClass %s differs from up's:\n got %+v\nwant %+v", w.Name, g, w)
		}
	}
	gotGroups := Of[*groupv1.VolumeGroupSnapshotClass](objs)
	if len(gotGroups) != len(groups) {
		t.Fatalf("VolumeGroupSnapshotClasses %v, want %v", names(gotGroups), names(groups))
	}
	for i := range groups {
		g, w := gotGroups[i], groups[i]
		if g.Name != w.Name || g.Driver != w.Driver || g.DeletionPolicy != w.DeletionPolicy ||
			!maps.Equal(g.Parameters, w.Parameters) || !maps.Equal(g.Annotations, w.Annotations) {
			t.Errorf("VolumeGroupSnapshotClass %s differs from up's:\n got %+v\nwant %+v", w.Name, g, w)
		}
	}
}
