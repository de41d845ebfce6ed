// Package protection runs the pvc-protection and pv-protection loops end to
// end, as `volplane up` runs them: next to the binder and the provisioner,
// against the embedded, real kube-apiserver (whose admission plugin adds the
// claim and volume finalizers) and kube-controller-manager (garbage
// collection), with ephemeral-volume and vac-protection, with the bundled hostpath driver served on each simulated
// node. No kubelet runs: pods are at most scheduled, and their phase is
// written by the tests when it matters.
//
// Tests run one at a time, each in its own namespace.
package protection

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/cluster"
	"github.com/volplane/volplane/internal/controller/manager"
	"github.com/volplane/volplane/internal/hostpath"
	"github.com/volplane/volplane/internal/stacktest"
	"github.com/volplane/volplane/test/e2e/support"
)

// The classes the tests use, made once.
const (
	classDelete = "protect-delete" // Immediate, Delete
	classRetain = "protect-retain" // Immediate, Retain
	// classNone names no StorageClass: its claims stay Pending, which is
	// all a test of the pvc-protection rule needs.
	classNone = "no-such-class"
)

// bed is the package's test bed.
var bed struct {
	endpoints []string
	drivers   []csi.ControllerClient
	rest      *rest.Config
	loops     *loops
}

// everyLoop is what `volplane up` runs.
var everyLoop = []string{manager.Binder, manager.Provisioner, manager.PVCProtection, manager.PVProtection,
	manager.EphemeralVolume, manager.VACProtection}

func TestMain(m *testing.M) {
	support.Main(m, 2, setUp)
}

func setUp(cp *cluster.ControlPlane) (func(), error) {
	drivers, err := support.NewDrivers("vp-prot-")
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	teardown := func() {
		if bed.loops != nil {
			_ = bed.loops.Stop()
		}
		drivers.Stop()
	}
	bed.rest = cp.RESTConfig
	for _, node := range cp.Nodes {
		endpoint := drivers.Endpoint(node)
		if _, err := drivers.Serve(hostpath.Config{Endpoint: endpoint, NodeID: node, Capacity: 1 << 30,
			DataDir: filepath.Join(drivers.Dir, node), Mounter: hostpath.NewFakeMounter()}); err != nil {
			teardown()
			return nil, err
		}
		conn, err := support.Dial(endpoint)
		if err != nil {
			teardown()
			return nil, err
		}
		bed.endpoints, bed.drivers = append(bed.endpoints, endpoint), append(bed.drivers, csi.NewControllerClient(conn))
	}
	if err := registerStorage(ctx, cp); err != nil {
		teardown()
		return nil, err
	}
	bed.loops = startLoops(everyLoop...)
	return teardown, nil
}

func registerStorage(ctx context.Context, cp *cluster.ControlPlane) error {
	driver := &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: hostpath.DriverName},
		Spec: storagev1.CSIDriverSpec{AttachRequired: ptr.To(false)}}
	if _, err := cp.Client.StorageV1().CSIDrivers().Create(ctx, driver, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("CSIDriver: %w", err)
	}
	for name, policy := range map[string]corev1.PersistentVolumeReclaimPolicy{
		classDelete: corev1.PersistentVolumeReclaimDelete, classRetain: corev1.PersistentVolumeReclaimRetain} {
		sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: hostpath.DriverName,
			ReclaimPolicy: ptr.To(policy), VolumeBindingMode: ptr.To(storagev1.VolumeBindingImmediate)}
		if _, err := cp.Client.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("class %s: %w", name, err)
		}
	}
	return nil
}

// loops is one manager.Run in this process.
type loops = stacktest.Loops

func startLoops(names ...string) *loops {
	return stacktest.StartLoops(manager.Config{REST: bed.rest, Controllers: names, CSIEndpoints: bed.endpoints,
		Workers: 4, ResyncPeriod: 2 * time.Second})
}

// withoutLoops stops the shared loops for the test (or until the returned
// function starts them again), and starts them again after it.
func withoutLoops(t *testing.T) (restart func()) {
	t.Helper()
	if err := bed.loops.Stop(); err != nil {
		t.Fatalf("shared loops: %v", err)
	}
	restarted := false
	restart = func() {
		if !restarted {
			restarted = true
			bed.loops = startLoops(everyLoop...)
		}
	}
	t.Cleanup(restart)
	return restart
}
