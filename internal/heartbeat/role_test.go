package heartbeat

import (
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
)

// snapshotter is the Lease Run writes for the snapshotter role of driver,
// held by holder on node ("" central), renewed age before now.
func snapshotter(holder, node string, age time.Duration) coordinationv1.Lease {
	return *Renewal(nil, Beat{Role: Snapshotter, Namespace: "kube-system", Driver: driver, Node: node,
		Identity: holder, Duration: DefaultDuration}, now.Add(-age))
}

func TestEachRoleHasItsOwnNamesAndTheProvisionersAreUnchanged(t *testing.T) {
	cases := []struct {
		role                        Role
		lease, node, label, sidecar string
	}{
		{Provisioner, "volplane-provisioner-hostpath.csi.volplane.io", "volplane-provisioner-hostpath.csi.volplane.io--node-1",
			"heartbeat.volplane.io/provisioner", "hostpath-csi-volplane-io"},
		{"", "volplane-provisioner-hostpath.csi.volplane.io", "volplane-provisioner-hostpath.csi.volplane.io--node-1",
			"heartbeat.volplane.io/provisioner", "hostpath-csi-volplane-io"},
		{Snapshotter, "volplane-snapshotter-hostpath.csi.volplane.io", "volplane-snapshotter-hostpath.csi.volplane.io--node-1",
			"heartbeat.volplane.io/snapshotter", "external-snapshotter-leader-hostpath-csi-volplane-io"},
	}
	for _, c := range cases {
		if got := c.role.LeaseName(driver, ""); got != c.lease {
			t.Errorf("%q.LeaseName(central) = %q, want %q", c.role, got, c.lease)
		}
		if got := c.role.LeaseName(driver, "node-1"); got != c.node {
			t.Errorf("%q.LeaseName(node-1) = %q, want %q", c.role, got, c.node)
		}
		if c.role.Label() != c.label || c.role.Annotation() != c.label {
			t.Errorf("%q: label %q, annotation %q, want %q", c.role, c.role.Label(), c.role.Annotation(), c.label)
		}
		if got := c.role.SidecarLeaseName(driver); got != c.sidecar {
			t.Errorf("%q.SidecarLeaseName = %q, want %q", c.role, got, c.sidecar)
		}
	}
	if LeaseName(driver, "n") != Provisioner.LeaseName(driver, "n") || Selector(driver) != Provisioner.Selector(driver) {
		t.Error("the package's names are no longer the provisioner's")
	}
	// csi-lib-utils cleans the lock name: a '/' and any other character
	// become '-', a trailing '-' gets an X.
	if got := Snapshotter.SidecarLeaseName("kubernetes.io/x_"); got != "external-snapshotter-leader-kubernetes-io-x-X" {
		t.Errorf("SidecarLeaseName = %q", got)
	}
}

func TestRoleNamesAreValidForAnyDriverAndNode(t *testing.T) {
	for _, in := range [][2]string{{"Hostpath.CSI.io", ""}, {"a--b", "c"}, {strings.Repeat("x", 300), "n"}, {"evil!=x", "\x00"}} {
		for _, r := range Roles {
			lease := r.LeaseName(in[0], in[1])
			if errs := validation.IsDNS1123Subdomain(lease); len(errs) > 0 || !strings.HasPrefix(lease, "volplane-"+string(r)+"-") {
				t.Errorf("%s.LeaseName(%q, %q) = %q: %v", r, in[0], in[1], lease, errs)
			}
			sel, err := labels.Parse(r.Selector(in[0]))
			if err != nil || !sel.Matches(labels.Set{r.Label(): LabelValue(in[0])}) {
				t.Errorf("%s.Selector(%q) = %q: %v", r, in[0], r.Selector(in[0]), err)
			}
		}
	}
}

func TestRenewalOfASnapshotterBeatsForItsRoleOnly(t *testing.T) {
	l := snapshotter("volplane-node-a", "node-1", 0)
	if l.Name != "volplane-snapshotter-hostpath.csi.volplane.io--node-1" {
		t.Errorf("name %q", l.Name)
	}
	if l.Labels[LabelSnapshotter] != driver || l.Annotations[AnnotationSnapshotter] != driver || l.Annotations[AnnotationNode] != "node-1" {
		t.Errorf("labels %v, annotations %v", l.Labels, l.Annotations)
	}
	if _, ok := l.Labels[LabelProvisioner]; ok {
		t.Errorf("labels %v: a snapshotter's heartbeat says a provisioner runs", l.Labels)
	}
}

func TestFindJudgesEachRoleByItsOwnLeases(t *testing.T) {
	csiSnapshotter := sidecar("x", "storage", "snapshotter-0", 3*time.Second)
	csiSnapshotter.Name = Snapshotter.SidecarLeaseName(driver)
	// A snapshotter's heartbeat named as the external-provisioner's
	// leader election Lease is still not the external-provisioner's.
	disguised := snapshotter("volplane-abc", "", time.Second)
	disguised.Name = SidecarLeaseName(driver)
	cases := []struct {
		name   string
		role   Role
		leases []coordinationv1.Lease
		want   Presence
	}{{
		name: "none",
		role: Snapshotter,
		want: Presence{Reason: "no snapshotter is serving hostpath.csi.volplane.io: no heartbeat or leader election Lease of it was found"},
	}, {
		name:   "a provisioner's heartbeat says nothing of the snapshotter",
		role:   Snapshotter,
		leases: []coordinationv1.Lease{heartbeat("volplane-abc", time.Second)},
		want:   Presence{Reason: "no snapshotter is serving hostpath.csi.volplane.io: no heartbeat or leader election Lease of it was found"},
	}, {
		name:   "nor a snapshotter's of the provisioner, whatever its name",
		role:   Provisioner,
		leases: []coordinationv1.Lease{snapshotter("volplane-abc", "", time.Second), disguised},
		want:   Presence{Reason: "no provisioner is serving hostpath.csi.volplane.io: no heartbeat or leader election Lease of it was found"},
	}, {
		name:   "the central snapshotter",
		role:   Snapshotter,
		leases: []coordinationv1.Lease{heartbeat("volplane-abc", time.Second), snapshotter("volplane-abc", "", 6*time.Second)},
		want: Presence{Serving: true, Leases: []string{"kube-system/volplane-snapshotter-hostpath.csi.volplane.io"},
			Holders: []string{"volplane-abc"}, RenewedAt: now.Add(-6 * time.Second),
			Reason: "hostpath.csi.volplane.io is served by volplane-abc (Lease kube-system/volplane-snapshotter-hostpath.csi.volplane.io renewed 6s ago)"},
	}, {
		name:   "node snapshotters, one gone",
		role:   Snapshotter,
		leases: []coordinationv1.Lease{snapshotter("a", "n1", time.Second), snapshotter("b", "n2", 2*time.Second), snapshotter("c", "n3", time.Hour)},
		want: Presence{Serving: true,
			Leases: []string{"kube-system/volplane-snapshotter-hostpath.csi.volplane.io--n1", "kube-system/volplane-snapshotter-hostpath.csi.volplane.io--n2",
				"kube-system/volplane-snapshotter-hostpath.csi.volplane.io--n3"},
			Holders: []string{"a", "b"}, Nodes: []string{"n1", "n2"}, RenewedAt: now.Add(-time.Second),
			Reason: "hostpath.csi.volplane.io is served by 2 snapshotters (a on node n1, b on node n2), the last heartbeat 1s ago"},
	}, {
		name:   "gone: the last heartbeat",
		role:   Snapshotter,
		leases: []coordinationv1.Lease{snapshotter("b", "n2", 7*time.Minute)},
		want: Presence{Leases: []string{"kube-system/volplane-snapshotter-hostpath.csi.volplane.io--n2"}, RenewedAt: now.Add(-7 * time.Minute),
			Reason: "no snapshotter is serving hostpath.csi.volplane.io: the last heartbeat was 7m ago, from b on node n2 (Lease kube-system/volplane-snapshotter-hostpath.csi.volplane.io--n2)"},
	}, {
		name:   "the csi-snapshotter's leader, in any namespace",
		role:   Snapshotter,
		leases: []coordinationv1.Lease{csiSnapshotter, sidecar(driver, "storage", "provisioner-0", time.Second)},
		want: Presence{Serving: true, Leases: []string{"storage/external-snapshotter-leader-hostpath-csi-volplane-io"},
			Holders: []string{"snapshotter-0"}, RenewedAt: now.Add(-3 * time.Second),
			Reason: "hostpath.csi.volplane.io is served by the csi-snapshotter leader snapshotter-0 (Lease storage/external-snapshotter-leader-hostpath-csi-volplane-io renewed 3s ago)"},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.role.Find(c.leases, driver, now); !equal(got, c.want) {
				t.Errorf("Find\n got %+v\nwant %+v", got, c.want)
			}
		})
	}
}
