// Package attacher runs the attacher loop end to end against the embedded,
// real kube-apiserver, with the bundled hostpath driver served in this
// process three times on the one simulated node: with attach required
// (PUBLISH_UNPUBLISH_VOLUME), without, and with under the name of the CSI
// driver an in-tree plugin is migrated to (ebs.csi.aws.com). Tests make what the
// attach/detach controller and the kubelet would (VolumeAttachments,
// CSINodes) and PVs by hand over volumes created through the driver, then
// check what the reference's external-attacher would have written.
//
// Each test runs its own attacher, through a client that counts writes, so
// that tests can count writes and stop the loop half way.
package attacher

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/internal/cluster"
	"github.com/volplane/volplane/internal/csi"
	"github.com/volplane/volplane/internal/hostpath"
	"github.com/volplane/volplane/test/e2e/support"
)

// The drivers: one that attaches, one that does not, and one that plays
// the CSI driver the in-tree awsElasticBlockStore plugin is migrated to.
const (
	attaching    = hostpath.DriverName
	nonAttaching = "plain.csi.volplane.io"
	awsEBS       = "ebs.csi.aws.com"
)

// bed is the package's test bed.
var bed struct {
	node      string
	endpoints []string
	pool      *csi.Pool
	calls     *driverCalls
}

func TestMain(m *testing.M) {
	support.Main(m, 1, setUp)
}

func setUp(cp *cluster.ControlPlane) (func(), error) {
	drivers, err := support.NewDrivers("vp-att-")
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	teardown := func() {
		if bed.pool != nil {
			_ = bed.pool.Close()
		}
		drivers.Stop()
	}
	bed.node = cp.Nodes[0]
	bed.calls = &driverCalls{n: map[string]int{}}
	var endpoints []string
	for _, d := range []struct {
		name   string
		attach bool
	}{{attaching, true}, {nonAttaching, false}, {awsEBS, true}} {
		endpoint := drivers.Endpoint(d.name)
		if _, err := drivers.Serve(hostpath.Config{Endpoint: endpoint, NodeID: bed.node, Name: d.name,
			DataDir: filepath.Join(drivers.Dir, d.name), Capacity: 1 << 30, AttachRequired: d.attach,
			Mounter: hostpath.NewFakeMounter(), Interceptor: bed.calls.intercept}); err != nil {
			teardown()
			return nil, err
		}
		endpoints = append(endpoints, endpoint)
	}
	bed.endpoints = endpoints
	if bed.pool, err = csi.DialPool(ctx, endpoints, nil); err != nil {
		teardown()
		return nil, err
	}
	node := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: bed.node}, Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{
		{Name: attaching, NodeID: bed.node}, {Name: nonAttaching, NodeID: bed.node}, {Name: awsEBS, NodeID: bed.node}}}}
	if _, err := cp.Client.StorageV1().CSINodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		teardown()
		return nil, fmt.Errorf("CSINode: %w", err)
	}
	return teardown, nil
}

// driverCalls counts the controller calls each volume got and can make
// ControllerPublishVolume fail.
type driverCalls struct {
	mu   sync.Mutex
	n    map[string]int // "<method> <volume>"
	fail map[string]error
	// afterPublish runs once a ControllerPublishVolume of the volume
	// succeeded, before its answer goes back.
	afterPublish map[string]func()
}

func (d *driverCalls) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	vol := ""
	if r, ok := req.(interface{ GetVolumeId() string }); ok {
		vol = r.GetVolumeId()
	}
	method := filepath.Base(info.FullMethod)
	d.mu.Lock()
	d.n[method+" "+vol]++
	err := d.fail[method+" "+vol]
	d.mu.Unlock()
	if err != nil {
		return nil, err
	}
	resp, err := h(ctx, req)
	d.mu.Lock()
	after := d.afterPublish[vol]
	d.mu.Unlock()
	if err == nil && method == "ControllerPublishVolume" && after != nil {
		after()
	}
	return resp, err
}

// onPublished runs f after each successful ControllerPublishVolume of vol.
func (d *driverCalls) onPublished(vol string, f func()) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.afterPublish == nil {
		d.afterPublish = map[string]func(){}
	}
	d.afterPublish[vol] = f
}

func (d *driverCalls) count(method, vol string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.n[method+" "+vol]
}

// failPublish makes ControllerPublishVolume of vol answer err; nil stops.
func (d *driverCalls) failPublish(vol string, err error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fail == nil {
		d.fail = map[string]error{}
	}
	d.fail["ControllerPublishVolume "+vol] = err
}

// createVolume makes a backend volume through the driver, as a provisioner
// would, and returns its handle.
func createVolume(t *testing.T, driver, name string) string {
	t.Helper()
	ep := bed.pool.Endpoints(driver)[0]
	vol, err := ep.CreateVolume(context.Background(), &csipb.CreateVolumeRequest{Name: name,
		CapacityRange: &csipb.CapacityRange{RequiredBytes: 1 << 20},
		VolumeCapabilities: []*csipb.VolumeCapability{{
			AccessType: &csipb.VolumeCapability_Mount{Mount: &csipb.VolumeCapability_MountVolume{}},
			AccessMode: &csipb.VolumeCapability_AccessMode{Mode: csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER}}}})
	if err != nil {
		t.Fatalf("CreateVolume %s: %v", name, err)
	}
	return vol.GetVolumeId()
}

var errUnavailable = status.Error(codes.ResourceExhausted, "no room on the backend right now")
