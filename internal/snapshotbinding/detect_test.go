package snapshotbinding

import (
	"strings"
	"testing"
	"time"
)

func TestCheckCluster(t *testing.T) {
	current := []string{"volumesnapshots", "volumesnapshots/status", "volumesnapshotcontents", "volumesnapshotclasses"}
	groups := []string{"volumegroupsnapshots", "volumegroupsnapshotcontents", "volumegroupsnapshotclasses"}
	fresh := LeaseSeen{Namespace: "kube-system", Holder: "snapshot-controller-7d", Renewed: now.Add(-5 * time.Second)}
	stale := LeaseSeen{Namespace: "kube-system", Holder: "snapshot-controller-7d", Renewed: now.Add(-time.Hour)}
	released := LeaseSeen{Namespace: "kube-system", Renewed: now.Add(-time.Second)}
	for _, tc := range []struct {
		name       string
		facts      ClusterFacts
		policy     Elsewhere
		wantGroups bool
		err        string
	}{
		{"current CRDs, nobody else (volplane up)", ClusterFacts{Snapshot: current, Group: groups}, Refuse, true, ""},
		{"no CRDs", ClusterFacts{}, Refuse, false, "install the CustomResourceDefinitions of deploy/crd"},
		{"no CRDs, even ignored", ClusterFacts{}, Ignore, false, "deploy/crd"},
		{"no v1 group API", ClusterFacts{Snapshot: current}, Refuse, false, "older snapshot CRDs"},
		{"no v1 group API, ignored", ClusterFacts{Snapshot: current}, Ignore, false, ""},
		{"another controller renewing", ClusterFacts{Snapshot: current, Group: groups, Leases: []LeaseSeen{stale, fresh}}, Refuse, false,
			"another snapshot-controller runs in this cluster (Lease kube-system/snapshot-controller-leader held by \"snapshot-controller-7d\""},
		{"another controller, ignored", ClusterFacts{Snapshot: current, Group: groups, Leases: []LeaseSeen{fresh}}, Ignore, true, ""},
		{"a stale Lease", ClusterFacts{Snapshot: current, Group: groups, Leases: []LeaseSeen{stale}}, Refuse, true, ""},
		{"a released Lease", ClusterFacts{Snapshot: current, Group: groups, Leases: []LeaseSeen{released}}, Refuse, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.facts.Now = now
			g, err := CheckCluster(tc.facts, tc.policy)
			if tc.err == "" {
				if err != nil || g != tc.wantGroups {
					t.Errorf("CheckCluster = %v, %v; want %v, nil", g, err, tc.wantGroups)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("CheckCluster error %v, want %q", err, tc.err)
			}
		})
	}
}
