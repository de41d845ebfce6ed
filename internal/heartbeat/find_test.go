package heartbeat

import (
	"slices"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

const driver = "hostpath.csi.volplane.io"

var now = time.Date(2026, 11, 25, 22, 0, 0, 0, time.UTC)

// heartbeat is the Lease Run writes for driver, held by holder and renewed
// age before now, changed by each opt.
func heartbeat(holder string, age time.Duration, opts ...func(*coordinationv1.Lease)) coordinationv1.Lease {
	l := Renewal(nil, Beat{Namespace: "kube-system", Driver: driver, Identity: holder, Duration: DefaultDuration}, now.Add(-age))
	for _, opt := range opts {
		opt(l)
	}
	return *l
}

// onNode makes it the heartbeat of node's provisioner.
func onNode(node string) func(*coordinationv1.Lease) {
	return func(l *coordinationv1.Lease) {
		*l = *Renewal(nil, Beat{Namespace: l.Namespace, Driver: driver, Node: node,
			Identity: *l.Spec.HolderIdentity, Duration: DefaultDuration}, l.Spec.RenewTime.Time)
	}
}

// sidecar is external-provisioner's leader election Lease for provisioner
// in namespace ns, renewed age before now (client-go's record: 15 s).
func sidecar(provisioner, ns, holder string, age time.Duration, opts ...func(*coordinationv1.Lease)) coordinationv1.Lease {
	renewed := metav1.NewMicroTime(now.Add(-age))
	l := coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: SidecarLeaseName(provisioner)},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder), LeaseDurationSeconds: ptr.To[int32](15),
			AcquireTime: &renewed, RenewTime: &renewed},
	}
	for _, opt := range opts {
		opt(&l)
	}
	return l
}

// released is client-go's release of a leader election Lease.
func released(l *coordinationv1.Lease) {
	l.Spec.HolderIdentity = ptr.To("")
	l.Spec.LeaseDurationSeconds = ptr.To[int32](1)
}

func TestFindSaysWhetherTheProvisionerIsServed(t *testing.T) {
	cases := []struct {
		name        string
		provisioner string // driver if ""
		leases      []coordinationv1.Lease
		want        Presence
	}{{
		name: "no Lease at all",
		want: Presence{Reason: "no provisioner is serving hostpath.csi.volplane.io: no heartbeat or leader election Lease of it was found"},
	}, {
		name:   "a fresh heartbeat",
		leases: []coordinationv1.Lease{heartbeat("volplane-abc", 4*time.Second)},
		want: Presence{Serving: true, Leases: []string{"kube-system/volplane-provisioner-hostpath.csi.volplane.io"},
			Holders: []string{"volplane-abc"}, RenewedAt: now.Add(-4 * time.Second),
			Reason: "hostpath.csi.volplane.io is served by volplane-abc (Lease kube-system/volplane-provisioner-hostpath.csi.volplane.io renewed 4s ago)"},
	}, {
		name:   "a heartbeat past its duration but within the slack",
		leases: []coordinationv1.Lease{heartbeat("volplane-abc", DefaultDuration+Slack)},
		want: Presence{Serving: true, Leases: []string{"kube-system/volplane-provisioner-hostpath.csi.volplane.io"},
			Holders: []string{"volplane-abc"}, RenewedAt: now.Add(-DefaultDuration - Slack),
			Reason: "hostpath.csi.volplane.io is served by volplane-abc (Lease kube-system/volplane-provisioner-hostpath.csi.volplane.io renewed 45s ago)"},
	}, {
		name:   "a stale heartbeat",
		leases: []coordinationv1.Lease{heartbeat("volplane-abc", 3*time.Minute)},
		want: Presence{Leases: []string{"kube-system/volplane-provisioner-hostpath.csi.volplane.io"}, RenewedAt: now.Add(-3 * time.Minute),
			Reason: "no provisioner is serving hostpath.csi.volplane.io: the last heartbeat was 3m ago, from volplane-abc (Lease kube-system/volplane-provisioner-hostpath.csi.volplane.io)"},
	}, {
		name:   "renewed ahead of the reader's clock",
		leases: []coordinationv1.Lease{heartbeat("volplane-abc", -2*time.Second)},
		want: Presence{Serving: true, Leases: []string{"kube-system/volplane-provisioner-hostpath.csi.volplane.io"},
			Holders: []string{"volplane-abc"}, RenewedAt: now.Add(2 * time.Second),
			Reason: "hostpath.csi.volplane.io is served by volplane-abc (Lease kube-system/volplane-provisioner-hostpath.csi.volplane.io renewed just now)"},
	}, {
		name: "a node deployment: two nodes fresh, one gone",
		leases: []coordinationv1.Lease{
			heartbeat("volplane-node-b", 2*time.Second, onNode("node-2")),
			heartbeat("volplane-node-a", 5*time.Second, onNode("node-1")),
			heartbeat("volplane-node-c", 10*time.Minute, onNode("node-3")),
		},
		want: Presence{Serving: true,
			Leases: []string{"kube-system/volplane-provisioner-hostpath.csi.volplane.io--node-1",
				"kube-system/volplane-provisioner-hostpath.csi.volplane.io--node-2",
				"kube-system/volplane-provisioner-hostpath.csi.volplane.io--node-3"},
			Holders: []string{"volplane-node-a", "volplane-node-b"}, Nodes: []string{"node-1", "node-2"}, RenewedAt: now.Add(-2 * time.Second),
			Reason: "hostpath.csi.volplane.io is served by 2 provisioners (volplane-node-a on node node-1, volplane-node-b on node node-2), the last heartbeat 2s ago"},
	}, {
		name: "a node deployment gone entirely: the last node's heartbeat",
		leases: []coordinationv1.Lease{
			heartbeat("volplane-node-a", 20*time.Minute, onNode("node-1")),
			heartbeat("volplane-node-b", 7*time.Minute, onNode("node-2")),
		},
		want: Presence{
			Leases: []string{"kube-system/volplane-provisioner-hostpath.csi.volplane.io--node-1",
				"kube-system/volplane-provisioner-hostpath.csi.volplane.io--node-2"},
			RenewedAt: now.Add(-7 * time.Minute),
			Reason:    "no provisioner is serving hostpath.csi.volplane.io: the last heartbeat was 7m ago, from volplane-node-b on node node-2 (Lease kube-system/volplane-provisioner-hostpath.csi.volplane.io--node-2)"},
	}, {
		name: "many nodes: three named, then how many more",
		leases: []coordinationv1.Lease{
			heartbeat("a", time.Second, onNode("n1")), heartbeat("b", time.Second, onNode("n2")),
			heartbeat("c", time.Second, onNode("n3")), heartbeat("d", time.Second, onNode("n4")),
			heartbeat("e", time.Second, onNode("n5")),
		},
		want: Presence{Serving: true,
			Leases: []string{"kube-system/volplane-provisioner-hostpath.csi.volplane.io--n1", "kube-system/volplane-provisioner-hostpath.csi.volplane.io--n2",
				"kube-system/volplane-provisioner-hostpath.csi.volplane.io--n3", "kube-system/volplane-provisioner-hostpath.csi.volplane.io--n4",
				"kube-system/volplane-provisioner-hostpath.csi.volplane.io--n5"},
			Holders: []string{"a", "b", "c", "d", "e"}, Nodes: []string{"n1", "n2", "n3", "n4", "n5"}, RenewedAt: now.Add(-time.Second),
			Reason: "hostpath.csi.volplane.io is served by 5 provisioners (a on node n1, b on node n2, c on node n3 and 2 more), the last heartbeat 1s ago"},
	}, {
		name:        "another driver's heartbeat does not count",
		leases:      []coordinationv1.Lease{heartbeat("volplane-abc", time.Second)},
		provisioner: "network.csi.volplane.io",
		want:        Presence{Reason: "no provisioner is serving network.csi.volplane.io: no heartbeat or leader election Lease of it was found"},
	}, {
		name: "a heartbeat whose label value is shared (mapped) but whose annotation names another driver",
		leases: []coordinationv1.Lease{heartbeat("volplane-abc", time.Second, func(l *coordinationv1.Lease) {
			l.Annotations[AnnotationProvisioner] = "other"
		})},
		want: Presence{Reason: "no provisioner is serving hostpath.csi.volplane.io: no heartbeat or leader election Lease of it was found"},
	}, {
		name:        "external-provisioner's leader, in any namespace",
		provisioner: "ebs.csi.aws.com",
		leases:      []coordinationv1.Lease{sidecar("ebs.csi.aws.com", "kube-system", "ebs-csi-controller-7d9f", 3*time.Second)},
		want: Presence{Serving: true, Leases: []string{"kube-system/ebs-csi-aws-com"}, Holders: []string{"ebs-csi-controller-7d9f"},
			RenewedAt: now.Add(-3 * time.Second),
			Reason:    "ebs.csi.aws.com is served by the external-provisioner leader ebs-csi-controller-7d9f (Lease kube-system/ebs-csi-aws-com renewed 3s ago)"},
	}, {
		name:        "external-provisioner's leader, expired",
		provisioner: "ebs.csi.aws.com",
		leases:      []coordinationv1.Lease{sidecar("ebs.csi.aws.com", "storage", "ebs-csi-controller-7d9f", 2*time.Hour)},
		want: Presence{Leases: []string{"storage/ebs-csi-aws-com"}, RenewedAt: now.Add(-2 * time.Hour),
			Reason: "no provisioner is serving ebs.csi.aws.com: its leader ebs-csi-controller-7d9f last renewed Lease storage/ebs-csi-aws-com 120m ago"},
	}, {
		name:        "external-provisioner's leader released the Lease on exit",
		provisioner: "ebs.csi.aws.com",
		leases:      []coordinationv1.Lease{sidecar("ebs.csi.aws.com", "kube-system", "", 90*time.Second, released)},
		want: Presence{Leases: []string{"kube-system/ebs-csi-aws-com"}, RenewedAt: now.Add(-90 * time.Second),
			Reason: "no provisioner is serving ebs.csi.aws.com: its last leader released Lease kube-system/ebs-csi-aws-com 90s ago"},
	}, {
		name:        "a Lease of the sidecar's name that is a volplane heartbeat of another driver is not the sidecar's",
		provisioner: "volplane-provisioner-x",
		leases: []coordinationv1.Lease{heartbeat("volplane-abc", time.Second, func(l *coordinationv1.Lease) {
			l.Name = "volplane-provisioner-x"
		})},
		want: Presence{Reason: "no provisioner is serving volplane-provisioner-x: no heartbeat or leader election Lease of it was found"},
	}, {
		name: "a Lease without a renewal time counts from its acquisition; without either it is stale",
		leases: []coordinationv1.Lease{
			heartbeat("a", 2*time.Second, onNode("n1"), func(l *coordinationv1.Lease) { l.Spec.RenewTime = nil }),
			heartbeat("b", 2*time.Second, onNode("n2"), func(l *coordinationv1.Lease) { l.Spec.RenewTime, l.Spec.AcquireTime = nil, nil }),
		},
		want: Presence{Serving: true,
			Leases:  []string{"kube-system/volplane-provisioner-hostpath.csi.volplane.io--n1", "kube-system/volplane-provisioner-hostpath.csi.volplane.io--n2"},
			Holders: []string{"a"}, Nodes: []string{"n1"}, RenewedAt: now.Add(-2 * time.Second),
			Reason: "hostpath.csi.volplane.io is served by a on node n1 (Lease kube-system/volplane-provisioner-hostpath.csi.volplane.io--n1 renewed 2s ago)"},
	}, {
		name: "a Lease without a duration counts for DefaultDuration",
		leases: []coordinationv1.Lease{heartbeat("a", DefaultDuration, func(l *coordinationv1.Lease) {
			l.Spec.LeaseDurationSeconds = nil
		})},
		want: Presence{Serving: true, Leases: []string{"kube-system/volplane-provisioner-hostpath.csi.volplane.io"},
			Holders: []string{"a"}, RenewedAt: now.Add(-DefaultDuration),
			Reason: "hostpath.csi.volplane.io is served by a (Lease kube-system/volplane-provisioner-hostpath.csi.volplane.io renewed 40s ago)"},
	}, {
		name: "volplane and external-provisioner both fresh (a migration in flight)",
		leases: []coordinationv1.Lease{
			heartbeat("volplane-abc", 8*time.Second),
			sidecar(driver, "storage", "csi-controller-0", time.Second),
		},
		want: Presence{Serving: true,
			Leases:  []string{"kube-system/volplane-provisioner-hostpath.csi.volplane.io", "storage/hostpath-csi-volplane-io"},
			Holders: []string{"csi-controller-0", "volplane-abc"}, RenewedAt: now.Add(-time.Second),
			Reason: "hostpath.csi.volplane.io is served by 2 provisioners (csi-controller-0, volplane-abc), the last heartbeat 1s ago"},
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := c.provisioner
			if p == "" {
				p = driver
			}
			got := Find(c.leases, p, now)
			if !equal(got, c.want) {
				t.Errorf("Find\n got %+v\nwant %+v", got, c.want)
			}
		})
	}
}

func equal(a, b Presence) bool {
	return a.Serving == b.Serving && slices.Equal(a.Leases, b.Leases) && slices.Equal(a.Holders, b.Holders) &&
		slices.Equal(a.Nodes, b.Nodes) && a.RenewedAt.Equal(b.RenewedAt) && a.Reason == b.Reason
}
