// Package snapshotter runs the snapshotter loop (the csi-snapshotter
// sidecar's role) end to end against the embedded, real kube-apiserver:
// the bundled node-local hostpath driver is served in this process on each
// of two simulated nodes, behind an interceptor that records (and can
// fault) its snapshot calls, and the loop runs through the manager as
// `volplane controller --controllers snapshotter` runs it, restartable as
// a crash would stop it. The tests write VolumeSnapshotContents as the
// snapshot-controller would (dynamic: a VolumeSnapshot reference and the
// volume handle of a PV whose volume the driver made; pre-provisioned: the
// handle of a snapshot taken through the driver) and read the driver back;
// one test also runs the binder, the provisioner and the snapshot loop, for
// a user's VolumeSnapshot from start to end.
package snapshotter

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	snapclient "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/volplane/volplane/internal/bundle"
	"github.com/volplane/volplane/internal/cluster"
	"github.com/volplane/volplane/internal/controller/manager"
	"github.com/volplane/volplane/internal/csi"
	"github.com/volplane/volplane/internal/hostpath"
	"github.com/volplane/volplane/internal/snapshotapi"
	"github.com/volplane/volplane/internal/stacktest"
	"github.com/volplane/volplane/test/e2e/support"
)

// paramsClass has a driver parameter and a snapshotter secret; secretName
// is that secret, in the snapshot's namespace.
const (
	paramsClass = "snapper-params"
	secretName  = "snap-creds"
)

// bed is the package's test bed.
var bed struct {
	cp    *cluster.ControlPlane
	nodes []string
	// endpoints[i] is node i's driver; pool is the test's own client of
	// them, for the calls an administrator makes.
	endpoints []string
	pool      *csi.Pool
	snaps     snapclient.Interface
	calls     *driverCalls
	loops     *stacktest.Loops
}

func TestMain(m *testing.M) {
	support.Main(m, 2, setUp)
}

func setUp(cp *cluster.ControlPlane) (func(), error) {
	drivers, err := support.NewDrivers("vp-snapr-")
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	teardown := func() {
		if bed.loops != nil {
			_ = bed.loops.Stop()
		}
		if bed.pool != nil {
			_ = bed.pool.Close()
		}
		drivers.Stop()
	}
	bed.cp, bed.nodes = cp, cp.Nodes
	bed.calls = newDriverCalls()
	for _, node := range cp.Nodes {
		ep := drivers.Endpoint(node)
		if _, err := drivers.Serve(hostpath.Config{Endpoint: ep, NodeID: node, DataDir: filepath.Join(drivers.Dir, node),
			Capacity: 1 << 30, Mounter: hostpath.NewFakeMounter(), Interceptor: bed.calls.interceptor(node)}); err != nil {
			teardown()
			return nil, err
		}
		bed.endpoints = append(bed.endpoints, ep)
	}
	if bed.pool, err = csi.DialPool(ctx, bed.endpoints, nil); err != nil {
		teardown()
		return nil, err
	}
	if err := register(ctx, cp); err != nil {
		teardown()
		return nil, err
	}
	bed.loops = stacktest.StartLoops(loopsConfig())
	return teardown, nil
}

// register installs the snapshot API and paramsClass.
func register(ctx context.Context, cp *cluster.ControlPlane) error {
	if err := bundle.Register(ctx, cp.Client); err != nil {
		return err
	}
	if err := bundle.RegisterSnapshots(ctx, cp.RESTConfig); err != nil {
		return err
	}
	var err error
	if bed.snaps, err = snapclient.NewForConfig(cp.RESTConfig); err != nil {
		return err
	}
	class := &snapv1.VolumeSnapshotClass{ObjectMeta: metav1.ObjectMeta{Name: paramsClass}, Driver: hostpath.DriverName,
		DeletionPolicy: snapv1.VolumeSnapshotContentDelete, Parameters: map[string]string{
			"tier": "gold", snapshotapi.SecretNameParameter: secretName,
			snapshotapi.SecretNamespaceParameter: "${volumesnapshot.namespace}"}}
	if _, err := bed.snaps.SnapshotV1().VolumeSnapshotClasses().Create(ctx, class, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("class %s: %w", paramsClass, err)
	}
	return nil
}

// loopsConfig runs the snapshotter against both nodes' drivers,
// unthrottled, with no election and no metrics server.
func loopsConfig() manager.Config {
	cfg := manager.DefaultConfig()
	cfg.REST = rest.CopyConfig(bed.cp.RESTConfig)
	cfg.REST.QPS, cfg.REST.Burst = -1, 0
	cfg.Controllers, cfg.CSIEndpoints = []string{manager.Snapshotter}, bed.endpoints
	cfg.LeaderElect, cfg.MetricsAddr = false, ""
	return cfg
}

// restartLoops stops the loops, as a crash would, runs between (the loops
// stopped), and starts them again.
func restartLoops(t *testing.T, between func()) {
	t.Helper()
	if err := bed.loops.Stop(); err != nil {
		t.Fatalf("stop the loops: %v", err)
	}
	bed.loops = nil
	if between != nil {
		between()
	}
	bed.loops = stacktest.StartLoops(loopsConfig())
}

// alive fails a wait at once if the loops died.
func alive() error {
	if bed.loops == nil {
		return nil
	}
	return bed.loops.EndedEarly()
}
