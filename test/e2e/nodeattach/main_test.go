// Package nodeattach runs the attacher in node deployment, as deploy/attach
// runs it: one `volplane controller --node-deployment --controllers
// attacher` per node, beside that node's bundled driver (attach required),
// each authenticated as deploy/'s volplane-node ServiceAccount with a token
// bound to its Node, under deploy/'s node roles, the attach component's
// grants and both admission policies, against the embedded API server.
// It proves that a node's VolumeAttachment is attached (and detached) by
// that node's loop through that node's driver alone, that the other node's
// loop never calls, writes or is refused anything for it, that the
// component's grants are exactly what the loops use, and that the
// admission policy refuses a node's write to another node's attachment.
package nodeattach

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"google.golang.org/grpc"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/internal/cluster"
	"github.com/volplane/volplane/internal/hostpath"
	"github.com/volplane/volplane/test/e2e/support"
)

// bed is the package's test bed: two simulated nodes, each with its own
// node-local driver serving hostpath.csi.volplane.io with attach required.
var bed struct {
	nodes     []string
	endpoints map[string]string // node → its driver's socket
	calls     map[string]*driverCalls
}

func TestMain(m *testing.M) {
	support.Main(m, 2, setUp)
}

func setUp(cp *cluster.ControlPlane) (func(), error) {
	drivers, err := support.NewDrivers("vp-na-")
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	bed.nodes = cp.Nodes
	bed.endpoints = map[string]string{}
	bed.calls = map[string]*driverCalls{}
	for _, node := range cp.Nodes {
		calls := &driverCalls{n: map[string]int{}}
		endpoint := drivers.Endpoint(node)
		if _, err := drivers.Serve(hostpath.Config{Endpoint: endpoint, NodeID: node, DataDir: filepath.Join(drivers.Dir, node),
			Capacity: 1 << 30, AttachRequired: true, Mounter: hostpath.NewFakeMounter(), Interceptor: calls.intercept}); err != nil {
			drivers.Stop()
			return nil, err
		}
		bed.endpoints[node], bed.calls[node] = endpoint, calls
		// What the kubelet registers once the driver's registrar ran.
		csiNode := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: node}, Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{
			{Name: hostpath.DriverName, NodeID: node, TopologyKeys: []string{hostpath.TopologyKey}}}}}
		if _, err := cp.Client.StorageV1().CSINodes().Create(ctx, csiNode, metav1.CreateOptions{}); err != nil {
			drivers.Stop()
			return nil, fmt.Errorf("CSINode %s: %w", node, err)
		}
	}
	return drivers.Stop, nil
}

// driverCalls counts the calls one node's driver got, by method and volume.
type driverCalls struct {
	mu sync.Mutex
	n  map[string]int // "<method> <volume>"
}

func (d *driverCalls) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	vol := ""
	if r, ok := req.(interface{ GetVolumeId() string }); ok {
		vol = r.GetVolumeId()
	}
	d.mu.Lock()
	d.n[filepath.Base(info.FullMethod)+" "+vol]++
	d.mu.Unlock()
	return h(ctx, req)
}

func (d *driverCalls) count(method, vol string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.n[method+" "+vol]
}

// any counts the calls of any method naming vol.
func (d *driverCalls) any(vol string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for k, c := range d.n {
		if len(k) > len(vol) && k[len(k)-len(vol)-1:] == " "+vol {
			n += c
		}
	}
	return n
}
