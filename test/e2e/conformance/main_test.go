// Package conformance runs the conformance suite (internal/conformance)
// against the bundled drivers on everything `volplane up` runs
// (stacktest.Stack): each bundled driver must pass every scenario that
// applies to it, and a scenario that fails must say where and why.
package conformance

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	snapclient "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/internal/bundle"
	"github.com/volplane/volplane/internal/cluster"
	"github.com/volplane/volplane/internal/conformance"
	"github.com/volplane/volplane/internal/controller/manager"
	"github.com/volplane/volplane/internal/csi"
	"github.com/volplane/volplane/internal/hostpath"
	"github.com/volplane/volplane/internal/stacktest"
	"github.com/volplane/volplane/internal/userdriver"
	"github.com/volplane/volplane/test/e2e/support"
)

var bed struct {
	stack *stacktest.Stack
	snaps snapclient.Interface
	// faults is the proxy in front of the network driver's controller,
	// which the loops dial instead of the driver.
	faults *userdriver.FaultProxy
}

// nodes is how many simulated nodes the lab has: two, so that a volume
// moves between nodes.
const nodes = 2

func TestMain(m *testing.M) {
	cfg := stacktest.StackConfig{Loops: loops, Agent: restartAgent}
	support.Main(m, nodes, startRestartable, support.StackSetup("vp-conf-", cfg, func(cp *cluster.ControlPlane, s *stacktest.Stack) error {
		bed.stack = s
		var err error
		bed.snaps, err = snapclient.NewForConfig(cp.RESTConfig)
		if err != nil {
			return err
		}
		return conformance.EnsureWaitClass(context.Background(), cp.Client, bundle.NetworkClass, networkWaitClass)
	}), startFaults)
}

// networkFaults are the faults the proxy injects while they are on.
var networkFaults = hostpath.Faults{Seed: 1, Unavailable: 0.2, TimedOut: 0.2, Delayed: 0.1, MaxDelay: 500 * time.Millisecond}

// startFaults is a Setup after the stack's: it puts a fault proxy (faults
// off) in front of the network driver's controller and starts the loops
// again, dialing the proxy (loops).
func startFaults(*cluster.ControlPlane) (func(), error) {
	s := bed.stack
	if err := s.StopLoops(); err != nil {
		return nil, err
	}
	p, err := userdriver.StartFaultProxy(filepath.Join(s.DataDir(), "faults.sock"), networkEndpoint(s), networkFaults)
	if err != nil {
		return nil, err
	}
	bed.faults = p
	s.StartLoops()
	return p.Stop, nil
}

// loops adjusts the stack's loops: they dial the fault proxy, once there,
// for the network driver's controller, and know the restartable driver.
func loops(c *manager.Config) {
	c.CSIEndpoints = slices.Clone(c.CSIEndpoints)
	if bed.faults != nil {
		c.CSIEndpoints[len(c.CSIEndpoints)-1] = bed.faults.Address
	}
	restartLoops(c)
}

// networkWaitClass is the network driver's WaitForFirstConsumer class,
// which the bundle does not register.
const networkWaitClass = "conformance-network-wffc"

// networkLab is the lab of the bundled network driver.
func networkLab(t testing.TB) *conformance.Lab {
	s := bed.stack
	node := s.CP.Nodes[0]
	lab := baseLab(t, hostpath.NetworkDriverName, []string{networkEndpoint(s)}, s.Drivers.NodeEndpoints[node][1])
	lab.ImmediateClass, lab.WaitClass = bundle.NetworkClass, networkWaitClass
	lab.SnapshotClass = bundle.NetworkSnapshotClass
	lab.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce, corev1.ReadWriteMany, corev1.ReadOnlyMany}
	lab.Faults, lab.InjectedFaults = bed.faults.SetFaults, bed.faults.Injected
	lab.NodeDown = s.SetNodeDown
	return lab
}

// restartLab is the lab of the driver the test started (restartable), the
// one whose processes the kill scenarios kill.
func restartLab(t testing.TB) *conformance.Lab {
	node := bed.stack.CP.Nodes[0]
	lab := baseLab(t, restartDriver, []string{restarts.cfg.Endpoint}, restarts.cfg.NodeEndpoints[node])
	lab.ImmediateClass = restartClass
	lab.DataPath = restarts.mounter.Resolve
	lab.Restart = restarts.Restart
	return lab
}

// localLab is the lab of the bundled node-local driver.
func localLab(t testing.TB) *conformance.Lab {
	s := bed.stack
	node := s.CP.Nodes[0]
	lab := baseLab(t, hostpath.DriverName, s.Drivers.Endpoints[:len(s.CP.Nodes)], s.Drivers.NodeEndpoints[node][0])
	lab.ImmediateClass, lab.WaitClass = bundle.ImmediateClass, bundle.WaitClass
	lab.SnapshotClass, lab.GroupSnapshotClass = bundle.SnapshotClass, bundle.GroupSnapshotClass
	lab.AttributesClass = bundle.FastAttributes
	lab.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce, corev1.ReadWriteOncePod}
	return lab
}

// networkEndpoint is the network driver's controller: the last of the
// stack's endpoints (bundle.Start lists it after the node-local ones).
func networkEndpoint(s *stacktest.Stack) string {
	return s.Drivers.Endpoints[len(s.Drivers.Endpoints)-1]
}

// baseLab is what both labs share: the clients, the nodes, what the
// driver's controller (at the first of controllers) and node services
// report, and the data path through the stack's recorded mounts.
func baseLab(t testing.TB, driver string, controllers []string, nodeEndpoint string) *conformance.Lab {
	t.Helper()
	s := bed.stack
	ctrl, nodeInfo := probe(t, controllers[0]), probe(t, nodeEndpoint)
	if ctrl.Driver != driver || nodeInfo.Driver != driver {
		t.Fatalf("endpoints serve %s and %s, want %s", ctrl.Driver, nodeInfo.Driver, driver)
	}
	return &conformance.Lab{
		Client: s.CP.Client, Snapshots: bed.snaps, Driver: driver,
		Controller: ctrl, Node: nodeInfo, Nodes: s.CP.Nodes,
		Endpoints: controllers, DataDir: s.DataDir(),
		Block:       true,
		AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		DataPath:    s.Mounter.Resolve,
	}
}

func probe(t testing.TB, addr string) csi.Info {
	t.Helper()
	ep, err := csi.Dial(context.Background(), addr, nil)
	if err != nil {
		t.Fatalf("dial %s: %v", addr, err)
	}
	defer ep.Close()
	return ep.Info
}

var createOptions = metav1.CreateOptions{}

// claim is a small claim of class.
func claim(namespace, class string) *corev1.PersistentVolumeClaim {
	return support.Claim(namespace, "data", class, "64Mi")
}
