// Package nodeagent runs the node agent against the embedded, real
// kube-apiserver with the bundled hostpath driver served for each of two
// simulated nodes (a shared FakeMounter stands in for the kernel). No
// binder runs: volumes are made with the driver's CreateVolume and bound
// to their claims by hand.
package nodeagent

import (
	"context"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/cluster"
	"github.com/volplane/volplane/internal/csi"
	"github.com/volplane/volplane/internal/hostpath"
	"github.com/volplane/volplane/internal/nodeagent"
	"github.com/volplane/volplane/test/e2e/support"
)

var bed struct {
	cp        *cluster.ControlPlane
	dir       string
	mounter   *hostpath.FakeMounter
	endpoints map[string]string        // node -> socket
	drivers   map[string]*csi.Endpoint // node -> dialed driver
	agent     *running
	// attachDriver serves node-1 too, with attach required.
	attachEndpoint string
	attachDriver   *csi.Endpoint
	// tap watches and changes what every driver is sent and answers.
	tap driverTap
	// down are the nodes the agent takes for down (down_test.go).
	down nodeagent.DownNodes
}

// driverTap is the drivers' interceptor: it records the NodeExpandVolume
// calls and refuses those of the volumes in inUse as a volume that cannot
// grow while in use (FailedPrecondition); while noNodeExpand is set, it
// hides the node service's EXPAND_VOLUME capability (the agent probes it
// when it starts).
//
// It also records every node call that names a volume (nodeCalls) and
// answers those refuse lists (method/handle) with the code given.
type driverTap struct {
	mu           sync.Mutex
	seen         []*csipb.NodeExpandVolumeRequest
	inUse        map[string]bool
	noNodeExpand atomic.Bool
	nodeCalls    []nodeCall
	refuse       map[string]codes.Code
	// maxVolumes, when positive, replaces every NodeGetInfo's volume
	// limit; nodeInfos counts the NodeGetInfo calls (limits_test.go).
	maxVolumes, nodeInfos atomic.Int64
}

// nodeCall is a node service call and its request.
type nodeCall struct {
	method string
	req    proto.Message
}

func (c *driverTap) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	if r, ok := req.(interface {
		proto.Message
		GetVolumeId() string
	}); ok && strings.HasPrefix(info.FullMethod, "/csi.v1.Node/") {
		method := path.Base(info.FullMethod)
		c.mu.Lock()
		c.nodeCalls = append(c.nodeCalls, nodeCall{method, proto.Clone(r)})
		code, refuse := c.refuse[method+"/"+r.GetVolumeId()]
		c.mu.Unlock()
		if refuse {
			return nil, status.Error(code, "refused by the test")
		}
	}
	if r, ok := req.(*csipb.NodeExpandVolumeRequest); ok {
		c.mu.Lock()
		c.seen = append(c.seen, proto.CloneOf(r))
		refuse := c.inUse[r.GetVolumeId()]
		c.mu.Unlock()
		if refuse {
			return nil, status.Error(codes.FailedPrecondition, "volume in use: cannot expand it while staged or published")
		}
	}
	resp, err := handler(ctx, req)
	if info, ok := resp.(*csipb.NodeGetInfoResponse); ok {
		c.nodeInfos.Add(1)
		if limit := c.maxVolumes.Load(); limit > 0 {
			info.MaxVolumesPerNode = limit
		}
	}
	if caps, ok := resp.(*csipb.NodeGetCapabilitiesResponse); ok && c.noNodeExpand.Load() {
		caps.Capabilities = slices.DeleteFunc(slices.Clone(caps.Capabilities), func(c *csipb.NodeServiceCapability) bool {
			return c.GetRpc().GetType() == csipb.NodeServiceCapability_RPC_EXPAND_VOLUME
		})
	}
	return resp, err
}

// refuseInUse makes the drivers refuse, or stop refusing, to expand a
// volume while in use.
func (c *driverTap) refuseInUse(handle string, refuse bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.inUse == nil {
		c.inUse = map[string]bool{}
	}
	c.inUse[handle] = refuse
}

// refuseCall makes the drivers answer method (e.g. "NodePublishVolume")
// for the volume with code, until the test ends.
func (c *driverTap) refuseCall(t *testing.T, method, handle string, code codes.Code) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.refuse == nil {
		c.refuse = map[string]codes.Code{}
	}
	c.refuse[method+"/"+handle] = code
	t.Cleanup(func() {
		c.mu.Lock()
		defer c.mu.Unlock()
		delete(c.refuse, method+"/"+handle)
	})
}

// allowCall undoes refuseCall before the test ends.
func (c *driverTap) allowCall(method, handle string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.refuse, method+"/"+handle)
}

// callsOf returns the node calls of method made for the volume.
func (c *driverTap) callsOf(method, handle string) []proto.Message {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []proto.Message
	for _, call := range c.nodeCalls {
		if call.method == method && call.req.(interface{ GetVolumeId() string }).GetVolumeId() == handle {
			out = append(out, call.req)
		}
	}
	return out
}

// of returns the calls for a volume.
func (c *driverTap) of(handle string) []*csipb.NodeExpandVolumeRequest {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []*csipb.NodeExpandVolumeRequest
	for _, r := range c.seen {
		if r.GetVolumeId() == handle {
			out = append(out, r)
		}
	}
	return out
}

// attachDriverName is the second driver of node-1, whose volumes must be
// attached first.
const attachDriverName = "attach.csi.volplane.io"

// tokenAudience is the audience of the token the attach driver asks for.
const tokenAudience = "volplane-test"

func TestMain(m *testing.M) { support.Main(m, 2, setUp) }

func setUp(cp *cluster.ControlPlane) (func(), error) {
	drivers, err := support.NewDrivers("vp-na-")
	if err != nil {
		return nil, err
	}
	ctx := context.Background()
	teardown := func() {
		if bed.agent != nil {
			bed.agent.stop()
		}
		drivers.Stop()
	}
	bed.cp, bed.dir, bed.mounter = cp, drivers.Dir, hostpath.NewFakeMounter()
	bed.endpoints, bed.drivers = map[string]string{}, map[string]*csi.Endpoint{}
	for _, node := range cp.Nodes {
		endpoint := drivers.Endpoint(node)
		e, err := serve(ctx, drivers, hostpath.Config{Endpoint: endpoint, NodeID: node, Capacity: 1 << 30,
			DataDir: filepath.Join(drivers.Dir, "hostpath", node), Mounter: bed.mounter, Interceptor: bed.tap.intercept})
		if err != nil {
			teardown()
			return nil, err
		}
		bed.endpoints[node], bed.drivers[node] = endpoint, e
	}
	if err := startAttachDriver(ctx, drivers, cp.Nodes[0]); err != nil {
		teardown()
		return nil, err
	}
	// podInfoOnMount, so that the node calls carry the pod's identity as
	// the kubelet's do.
	driver := &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: hostpath.DriverName},
		Spec: storagev1.CSIDriverSpec{AttachRequired: ptr.To(false), PodInfoOnMount: ptr.To(true)}}
	if _, err := cp.Client.StorageV1().CSIDrivers().Create(ctx, driver, metav1.CreateOptions{}); err != nil {
		teardown()
		return nil, err
	}
	// A service account token of the pod at every publish, in the
	// secrets (the kubelet's tokenRequests).
	attachDriver := &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: attachDriverName},
		Spec: storagev1.CSIDriverSpec{AttachRequired: ptr.To(true), ServiceAccountTokenInSecrets: ptr.To(true),
			TokenRequests: []storagev1.TokenRequest{{Audience: tokenAudience}}}}
	if _, err := cp.Client.StorageV1().CSIDrivers().Create(ctx, attachDriver, metav1.CreateOptions{}); err != nil {
		teardown()
		return nil, err
	}
	bed.agent, err = startAgent()
	if err != nil {
		teardown()
		return nil, err
	}
	return teardown, nil
}

// serve runs a driver and dials it once it answers.
func serve(ctx context.Context, drivers *support.Drivers, cfg hostpath.Config) (*csi.Endpoint, error) {
	if _, err := drivers.Serve(cfg); err != nil {
		return nil, err
	}
	return csi.Dial(ctx, cfg.Endpoint, nil)
}

// running is an agent running in the background, with its metrics.
type running struct {
	cancel  context.CancelFunc
	done    chan error
	metrics *prometheus.Registry
}

func startAgent() (*running, error) { return startAgentWith(nil) }

// startAgentWith is startAgent with mod (if not nil) changing the
// agent's configuration.
func startAgentWith(mod func(*nodeagent.Config)) (*running, error) {
	reg := prometheus.NewRegistry()
	// Volume stats are cached for a second (the kubelet's default: a minute).
	// A pod's attach-and-mount wait lasts 3 seconds (the kubelet's: 2m3s).
	cfg := nodeagent.Config{Client: bed.cp.Client, DataDir: bed.dir, Metrics: reg, VolumeStatsAggPeriod: time.Second,
		PodAttachAndMountTimeout: 3 * time.Second, Down: bed.down.Down, OnUp: bed.down.OnUp}
	for _, node := range bed.cp.Nodes {
		endpoints := []string{bed.endpoints[node]}
		if node == bed.cp.Nodes[0] {
			endpoints = append(endpoints, bed.attachEndpoint)
		}
		cfg.Nodes = append(cfg.Nodes, nodeagent.Node{Name: node, Endpoints: endpoints})
	}
	if mod != nil {
		mod(&cfg)
	}
	a, err := nodeagent.New(cfg)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{cancel: cancel, done: make(chan error, 1), metrics: reg}
	go func() { r.done <- a.Run(ctx) }()
	return r, nil
}

func (r *running) stop() { r.cancel(); <-r.done }

func startAttachDriver(ctx context.Context, drivers *support.Drivers, node string) error {
	bed.attachEndpoint = drivers.Endpoint("attach")
	var err error
	bed.attachDriver, err = serve(ctx, drivers, hostpath.Config{Endpoint: bed.attachEndpoint, NodeID: node, Capacity: 1 << 30, Name: attachDriverName,
		AttachRequired: true, DataDir: filepath.Join(drivers.Dir, "attach", node), Mounter: bed.mounter, Interceptor: bed.tap.intercept})
	return err
}
