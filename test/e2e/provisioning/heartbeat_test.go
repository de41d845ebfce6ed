package provisioning

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/volplane/volplane/internal/controller/heartbeats"
	"github.com/volplane/volplane/internal/inspect"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/volplane/volplane/internal/controller/manager"
	"github.com/volplane/volplane/internal/controller/provisioner"
	"github.com/volplane/volplane/internal/heartbeat"
	"github.com/volplane/volplane/internal/hostpath"
	"github.com/volplane/volplane/internal/stacktest"
)

// heartbeatPeriod is short so that renewals show within a test.
const heartbeatPeriod = 100 * time.Millisecond

// presence is what `volplane explain` would say of the bundled driver:
// heartbeat.Find over the Leases inspect.HeartbeatLeases reads across namespaces.
func presence(t *testing.T) heartbeat.Presence {
	t.Helper()
	cp := stacktest.ControlPlane(t)
	leases, err := inspect.HeartbeatLeases(context.Background(), cp.Client.CoordinationV1(), hostpath.DriverName)
	if err != nil {
		t.Fatal(err)
	}
	return heartbeat.Find(leases, hostpath.DriverName, time.Now())
}

// startProvisioner runs the provisioner with its heartbeat in namespace
// ns, on node (node deployment) or central ("").
func startProvisioner(rc *rest.Config, ns, node string) *loops {
	cfg := manager.Config{REST: rc, Controllers: provisionerOnly, CSIEndpoints: endpoints(),
		Workers: 2, ResyncPeriod: 2 * time.Second, LeaderElectNamespace: ns, HeartbeatPeriod: heartbeatPeriod}
	if node != "" {
		i := slices.IndexFunc(bed.drivers, func(d *nodeDriver) bool { return d.node == node })
		cfg.CSIEndpoints = []string{bed.drivers[i].endpoint}
		cfg.NodeDeployment = &provisioner.NodeDeployment{NodeName: node, ImmediateBinding: true,
			BaseDelay: 50 * time.Millisecond, MaxDelay: time.Second}
	}
	return stacktest.StartLoops(cfg)
}

// While the provisioner runs, its heartbeat Lease is renewed and Find says
// the driver is served, by this host; once it stops, the Lease is gone
// and Find says no provisioner is serving it.
func TestTheProvisionersHeartbeatSaysWhetherItRuns(t *testing.T) {
	withoutSharedLoops(t)
	cp := stacktest.ControlPlane(t)
	ns := stacktest.Namespace(t)
	stacktest.Eventually(t, "the shared loops' heartbeat gone", func() string {
		if p := presence(t); p.Serving || len(p.Leases) > 0 {
			return p.Reason
		}
		return ""
	}, nil)

	l := startProvisioner(cp.RESTConfig, ns, "")
	host, _ := os.Hostname()
	lease := ns + "/" + heartbeat.LeaseName(hostpath.DriverName, "")
	var first time.Time
	stacktest.Eventually(t, "served by "+host, func() string {
		p := presence(t)
		if !p.Serving || !slices.Equal(p.Holders, []string{host}) || !slices.Equal(p.Leases, []string{lease}) {
			return fmt.Sprintf("%+v", p)
		}
		first = p.RenewedAt
		return ""
	}, l.EndedEarly)
	stacktest.Eventually(t, "the heartbeat renewed", func() string {
		if p := presence(t); !p.RenewedAt.After(first) {
			return fmt.Sprintf("renewed at %s, as first seen", p.RenewedAt)
		}
		return ""
	}, l.EndedEarly)

	if err := l.Stop(); err != nil {
		t.Fatalf("loops: %v", err)
	}
	stacktest.Eventually(t, "no provisioner serving once stopped", func() string {
		p := presence(t)
		if p.Serving || len(p.Leases) > 0 || !strings.HasPrefix(p.Reason, "no provisioner is serving "+hostpath.DriverName) {
			return fmt.Sprintf("%+v", p)
		}
		return ""
	}, nil)
}

// In node deployment every node's provisioner keeps a Lease of its own:
// Find names the nodes served, and a node whose provisioner stopped drops
// out while the others still serve.
func TestEveryNodesProvisionerHasItsOwnHeartbeat(t *testing.T) {
	withoutSharedLoops(t)
	cp := stacktest.ControlPlane(t)
	ns := stacktest.Namespace(t)
	runs := map[string]*loops{}
	for _, node := range cp.Nodes {
		runs[node] = startProvisioner(cp.RESTConfig, ns, node)
	}
	alive := func() error {
		for node, l := range runs {
			if err := l.EndedEarly(); err != nil {
				return fmt.Errorf("%s: %w", node, err)
			}
		}
		return nil
	}
	served := func(nodes []string) func() string {
		return func() string {
			p := presence(t)
			if p.Serving != (len(nodes) > 0) || !slices.Equal(p.Nodes, nodes) {
				return fmt.Sprintf("%+v", p)
			}
			return ""
		}
	}
	stacktest.Eventually(t, "served on every node", served(cp.Nodes), alive)
	stopped, others := cp.Nodes[0], cp.Nodes[1:]
	if err := runs[stopped].Stop(); err != nil {
		t.Fatalf("%s: %v", stopped, err)
	}
	stacktest.Eventually(t, "served on the other nodes only", served(others), alive)
	for _, node := range others {
		if err := runs[node].Stop(); err != nil {
			t.Fatalf("%s: %v", node, err)
		}
	}
	stacktest.Eventually(t, "served nowhere", served(nil), nil)
}

// A heartbeat taken over by another process (a new leader while the old
// one still ran) is not deleted by the old one when it stops.
func TestAStoppedHeartbeatLeavesALeaseAnotherProcessRenewed(t *testing.T) {
	cp := stacktest.ControlPlane(t)
	ns := stacktest.Namespace(t)
	leases := cp.Client.CoordinationV1().Leases(ns)
	const driver = "takeover.example.com"
	name := heartbeat.LeaseName(driver, "")
	run := func(identity string, period time.Duration) (stop func()) {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			done <- heartbeats.Run(ctx, cp.Client.CoordinationV1(), heartbeats.Config{
				Namespace: ns, Provisioners: []string{driver}, Identity: identity, Period: period})
		}()
		return func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("%s: %v", identity, err)
			}
		}
	}
	holder := func(want string) func() string {
		return func() string {
			l, err := leases.Get(context.Background(), name, metav1.GetOptions{})
			if err != nil {
				return err.Error()
			}
			if got := *l.Spec.HolderIdentity; got != want {
				return "held by " + got
			}
			return ""
		}
	}
	stopOld := run("old", time.Hour) // writes once
	stacktest.Eventually(t, "held by old", holder("old"), nil)
	stopNew := run("new", heartbeatPeriod)
	stacktest.Eventually(t, "taken over by new", holder("new"), nil)
	stopOld()
	if wrong := holder("new")(); wrong != "" {
		t.Fatalf("after the old one stopped: %s", wrong)
	}
	stopNew()
	stacktest.Eventually(t, "deleted by new when it stopped", func() string {
		if _, err := leases.Get(context.Background(), name, metav1.GetOptions{}); err == nil {
			return "still there"
		}
		return ""
	}, nil)
}
