// Package expansion runs the resizer loop end to end against the embedded,
// real kube-apiserver: the bundled hostpath driver is served in this
// process on the one simulated node, the binder and the provisioner run
// through the manager as `volplane controller` runs them, and each test
// runs its own resizer through a client that counts its writes (and can
// stop it right after one, as a crash would). Claims of the bundled class
// volplane-hostpath are grown by editing their request, as a user would.
package expansion

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/bundle"
	"github.com/volplane/volplane/internal/cluster"
	"github.com/volplane/volplane/internal/controller/manager"
	"github.com/volplane/volplane/internal/csi"
	"github.com/volplane/volplane/internal/hostpath"
	"github.com/volplane/volplane/internal/stacktest"
	"github.com/volplane/volplane/test/e2e/support"
)

// driverCapacity is all the driver may give out: it answers OutOfRange
// (infeasible) to a request above it.
const driverCapacity = 1 << 30

// fixedClass is like volplane-hostpath but disallows expansion;
// secretClass names a controller-expand secret in the claim's namespace.
const (
	fixedClass  = "hostpath-fixed"
	secretClass = "hostpath-expand-secret"
	secretName  = "expand-credentials"
)

// bed is the package's test bed.
var bed struct {
	// endpoint is the driver's socket.
	endpoint string
	pool     *csi.Pool
	calls    *driverCalls
	shared   *stacktest.Loops
}

func TestMain(m *testing.M) {
	support.Main(m, 1, setUp)
}

func setUp(cp *cluster.ControlPlane) (func(), error) {
	drivers, err := support.NewDrivers("vp-exp-")
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	teardown := func() {
		if bed.shared != nil {
			_ = bed.shared.Stop()
		}
		if bed.pool != nil {
			_ = bed.pool.Close()
		}
		drivers.Stop()
	}
	bed.calls = &driverCalls{n: map[string]int{}, secrets: map[string]map[string]string{}}
	bed.endpoint = drivers.Endpoint("csi")
	if _, err := drivers.Serve(hostpath.Config{Endpoint: bed.endpoint, NodeID: cp.Nodes[0], DataDir: filepath.Join(drivers.Dir, "data"),
		Capacity: driverCapacity, Mounter: hostpath.NewFakeMounter(), Interceptor: bed.calls.intercept}); err != nil {
		teardown()
		return nil, err
	}
	if bed.pool, err = csi.DialPool(ctx, []string{bed.endpoint}, nil); err != nil {
		teardown()
		return nil, err
	}
	if err := registerStorage(ctx, cp); err != nil {
		teardown()
		return nil, err
	}
	bed.shared = stacktest.StartLoops(loopsConfig(cp.RESTConfig, bed.endpoint, manager.Binder, manager.Provisioner))
	return teardown, nil
}

// registerStorage creates the bundled driver's objects and fixedClass.
func registerStorage(ctx context.Context, cp *cluster.ControlPlane) error {
	if err := bundle.Register(ctx, cp.Client); err != nil {
		return err
	}
	immediate := storagev1.VolumeBindingImmediate
	fixed := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: fixedClass}, Provisioner: hostpath.DriverName,
		VolumeBindingMode: &immediate, AllowVolumeExpansion: ptr.To(false)}
	withSecret := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: secretClass}, Provisioner: hostpath.DriverName,
		VolumeBindingMode: &immediate, AllowVolumeExpansion: ptr.To(true), Parameters: map[string]string{
			"csi.storage.k8s.io/controller-expand-secret-name":      secretName,
			"csi.storage.k8s.io/controller-expand-secret-namespace": "${pvc.namespace}"}}
	for _, sc := range []*storagev1.StorageClass{fixed, withSecret} {
		if _, err := cp.Client.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("class %s: %w", sc.Name, err)
		}
	}
	return nil
}

// loopsConfig runs the given loops against the driver, unthrottled, with
// no election and no metrics server.
func loopsConfig(rc *rest.Config, endpoint string, loops ...string) manager.Config {
	cfg := manager.DefaultConfig()
	cfg.REST = rest.CopyConfig(rc)
	cfg.REST.QPS, cfg.REST.Burst = -1, 0
	cfg.Controllers, cfg.CSIEndpoints = loops, []string{endpoint}
	cfg.LeaderElect, cfg.MetricsAddr = false, ""
	return cfg
}

// driverCalls counts the driver's calls by method and keeps the secrets of
// the last ControllerExpandVolume of each volume.
type driverCalls struct {
	mu      sync.Mutex
	n       map[string]int
	secrets map[string]map[string]string
}

func (d *driverCalls) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	method := filepath.Base(info.FullMethod)
	d.mu.Lock()
	d.n[method]++
	if r, ok := req.(*csipb.ControllerExpandVolumeRequest); ok {
		d.secrets[r.GetVolumeId()] = r.GetSecrets()
	}
	d.mu.Unlock()
	return h(ctx, req)
}

func (d *driverCalls) expandSecrets(volume string) map[string]string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.secrets[volume]
}

func (d *driverCalls) count(method string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.n[method]
}
