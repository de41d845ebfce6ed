// Package modification runs VolumeAttributesClasses end to end against the
// embedded, real kube-apiserver: the binder and the provisioner (through
// manager.Run, as `up` runs them) and the modifier loop (run directly: the
// manager runs it inside the resizer loop), with the bundled node-local
// hostpath driver served in this process on the one simulated node. Tests
// check what a user sees (claims, PVs, events) and the mutable parameters
// the driver holds for the volume; one runs the manager's resizer loop in
// place of the test's modifier, and every test ends with the invariant
// checker.
//
// The classes are the bundle's (volplane-standard, volplane-fast) plus one
// whose parameters the driver refuses.
package modification

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/bundle"
	"github.com/volplane/volplane/internal/cluster"
	"github.com/volplane/volplane/internal/controller/manager"
	"github.com/volplane/volplane/internal/controller/modifier"
	"github.com/volplane/volplane/internal/controller/resizing"
	"github.com/volplane/volplane/internal/csi"
	"github.com/volplane/volplane/internal/hostpath"
	"github.com/volplane/volplane/internal/stacktest"
	"github.com/volplane/volplane/test/e2e/support"
)

const (
	// class is the StorageClass of every claim: Immediate, Delete.
	class = "modification-immediate"
	// refused is a VolumeAttributesClass whose tier the driver refuses.
	refused = "modification-refused"
)

// bed is the package's test bed.
var bed struct {
	driver   *hostpath.Driver
	endpoint string
	loops    *stacktest.Loops
	// pool is the modifier's client of the driver, for each of its runs.
	pool     *csi.Pool
	modifier *stacktest.LoopRun
}

func TestMain(m *testing.M) {
	support.Main(m, 1, setUp)
}

func setUp(cp *cluster.ControlPlane) (func(), error) {
	drivers, err := support.NewDrivers("vp-mod-")
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	teardown := func() {
		if bed.modifier != nil {
			bed.modifier.Stop()
		}
		if bed.pool != nil {
			_ = bed.pool.Close()
		}
		if bed.loops != nil {
			_ = bed.loops.Stop()
		}
		drivers.Stop()
	}
	bed.endpoint = drivers.Endpoint("csi")
	bed.driver, err = drivers.Serve(hostpath.Config{Endpoint: bed.endpoint, NodeID: cp.Nodes[0],
		DataDir: filepath.Join(drivers.Dir, "data"), Capacity: 1 << 30, Mounter: hostpath.NewFakeMounter()})
	if err != nil {
		teardown()
		return nil, err
	}
	if err := registerStorage(ctx, cp.Client); err != nil {
		teardown()
		return nil, err
	}
	bed.loops = stacktest.StartLoops(manager.Config{REST: cp.RESTConfig, CSIEndpoints: []string{bed.endpoint},
		Controllers: []string{manager.Binder, manager.Provisioner}, Workers: 4, ResyncPeriod: 2 * time.Second})
	if bed.pool, err = csi.DialPool(ctx, []string{bed.endpoint}, nil); err != nil {
		teardown()
		return nil, err
	}
	if bed.modifier, err = startModifier(cp); err != nil {
		teardown()
		return nil, err
	}
	return teardown, nil
}

// registerStorage creates the driver's CSIDriver, the class, the bundle's
// attributes classes and the refused one.
func registerStorage(ctx context.Context, client kubernetes.Interface) error {
	driver := &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: hostpath.DriverName},
		Spec: storagev1.CSIDriverSpec{AttachRequired: ptr.To(false)}}
	if _, err := client.StorageV1().CSIDrivers().Create(ctx, driver, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("CSIDriver: %w", err)
	}
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: class}, Provisioner: hostpath.DriverName,
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingImmediate), ReclaimPolicy: ptr.To(corev1.PersistentVolumeReclaimDelete)}
	if _, err := client.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("class: %w", err)
	}
	vacs := append(bundle.AttributeClasses(), &storagev1.VolumeAttributesClass{ObjectMeta: metav1.ObjectMeta{Name: refused},
		DriverName: hostpath.DriverName, Parameters: map[string]string{hostpath.ParamTier: "gold"}})
	for _, vac := range vacs {
		if _, err := client.StorageV1().VolumeAttributesClasses().Create(ctx, vac, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("VolumeAttributesClass %s: %w", vac.Name, err)
		}
	}
	return nil
}

// startModifier runs the modifier over the driver, recording events to
// the API server as the manager would.
func startModifier(cp *cluster.ControlPlane) (*stacktest.LoopRun, error) {
	return stacktest.RunLoop(cp, 0, func(d stacktest.LoopDeps) (interface{ Run(context.Context) error }, error) {
		return modifier.New(modifier.Config{Client: d.Client, Informers: d.Informers, Pool: bed.pool, Workers: 2,
			Recorder: func(driver string) record.EventRecorder { return d.Recorder(resizing.EventComponent(driver)) }})
	})
}
