package hostpath

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

const testNode = "node-1"

// shortTempDir is a temporary directory with a short path: a unix socket
// path must fit in 107 bytes, which t.TempDir does not promise.
func shortTempDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "hp")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// testConfig is a driver on node-1 with 1 TiB, at most 3 attached volumes
// and attaching on; modify it as a test needs.
func testConfig(dir string, mounter Mounter) Config {
	return Config{
		Endpoint:          "unix://" + filepath.Join(dir, "csi.sock"),
		NodeID:            testNode,
		DataDir:           filepath.Join(dir, "data"),
		Capacity:          1 << 40,
		MaxVolumesPerNode: 3,
		AttachRequired:    true,
		Mounter:           mounter,
	}
}

// testNetworkConfig is a network driver serving nodes, each on its own
// socket, with 1 TiB, at most 3 volumes attached per node; modify it as a
// test needs.
func testNetworkConfig(dir string, mounter Mounter, nodes ...string) Config {
	cfg := testConfig(dir, mounter)
	cfg.NodeID, cfg.Network = "", true
	cfg.NodeEndpoints = map[string]string{}
	for _, node := range nodes {
		cfg.NodeEndpoints[node] = "unix://" + filepath.Join(dir, node+".sock")
	}
	return cfg
}

// runningDriver is a driver serving on its sockets, with clients for them.
// node is the node service on the controller's socket (node-local mode) or
// of testNode (network mode); nodes has every node's.
type runningDriver struct {
	cfg        Config
	cancel     context.CancelFunc
	done       chan error
	conns      []*grpc.ClientConn
	controller csi.ControllerClient
	group      csi.GroupControllerClient
	node       csi.NodeClient
	nodes      map[string]csi.NodeClient
	identity   csi.IdentityClient
	driver     *Driver
}

// d is the driver itself, for tests that read its state.
func (r *runningDriver) d(t *testing.T) *Driver {
	t.Helper()
	return r.driver
}

func startDriver(t testing.TB, cfg Config) *runningDriver {
	t.Helper()
	d, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &runningDriver{cfg: cfg, cancel: cancel, done: make(chan error, 1), driver: d}
	go func() { r.done <- d.Run(ctx) }()
	for _, socket := range d.nodeSockets {
		waitForSocket(t, socket, r.done)
	}
	waitForSocket(t, d.socket, r.done)
	conn := r.dial(t, cfg.Endpoint)
	r.controller = csi.NewControllerClient(conn)
	r.group = csi.NewGroupControllerClient(conn)
	r.identity = csi.NewIdentityClient(conn)
	r.nodes = map[string]csi.NodeClient{}
	if !cfg.Network {
		r.node = csi.NewNodeClient(conn)
		r.nodes[cfg.NodeID] = r.node
	}
	for node, endpoint := range cfg.NodeEndpoints {
		r.nodes[node] = csi.NewNodeClient(r.dial(t, endpoint))
	}
	if cfg.Network {
		r.node = r.nodes[testNode]
	}
	t.Cleanup(func() { r.stop(t) })
	return r
}

func (r *runningDriver) dial(t testing.TB, endpoint string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	r.conns = append(r.conns, conn)
	return conn
}

func waitForSocket(t testing.TB, path string, done chan error) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case err := <-done:
			t.Fatalf("Run returned before serving: %v", err)
		default:
		}
		if _, err := os.Stat(path); err == nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("socket %s did not appear", path)
}

// stop cancels Run and checks that it returned cleanly; stopping twice is fine.
func (r *runningDriver) stop(t testing.TB) {
	t.Helper()
	if r.conns == nil {
		return
	}
	for _, c := range r.conns {
		c.Close()
	}
	r.conns = nil
	r.cancel()
	select {
	case err := <-r.done:
		if err != nil {
			t.Errorf("Run: %v", err)
		}
	case <-time.After(time.Minute):
		t.Error("Run did not return after its context was cancelled")
	}
}

func mountCap() *csi.VolumeCapability {
	return &csi.VolumeCapability{
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
		AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
	}
}

func blockCap() *csi.VolumeCapability {
	return &csi.VolumeCapability{
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
		AccessType: &csi.VolumeCapability_Block{Block: &csi.VolumeCapability_BlockVolume{}},
	}
}

// createReq is a CreateVolume request for a 1 GiB mount volume; modify it
// as a test needs.
func createReq(name string) *csi.CreateVolumeRequest {
	return &csi.CreateVolumeRequest{
		Name:               name,
		VolumeCapabilities: []*csi.VolumeCapability{mountCap()},
		CapacityRange:      &csi.CapacityRange{RequiredBytes: 1 << 30},
	}
}

func wantCode(t *testing.T, err error, want codes.Code) {
	t.Helper()
	if got := status.Code(err); got != want {
		t.Fatalf("got code %s (%v), want %s", got, err, want)
	}
}

func must[T any](t *testing.T) func(v T, err error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}
