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
func shortTempDir(t *testing.T) string {
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

// runningDriver is a driver serving on its socket, with clients for it.
type runningDriver struct {
	cfg        Config
	cancel     context.CancelFunc
	done       chan error
	conn       *grpc.ClientConn
	controller csi.ControllerClient
	node       csi.NodeClient
	identity   csi.IdentityClient
}

func startDriver(t *testing.T, cfg Config) *runningDriver {
	t.Helper()
	d, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &runningDriver{cfg: cfg, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- d.Run(ctx) }()
	waitForSocket(t, d.socket, r.done)
	r.conn, err = grpc.NewClient(cfg.Endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	r.controller = csi.NewControllerClient(r.conn)
	r.node = csi.NewNodeClient(r.conn)
	r.identity = csi.NewIdentityClient(r.conn)
	t.Cleanup(func() { r.stop(t) })
	return r
}

func waitForSocket(t *testing.T, path string, done chan error) {
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
func (r *runningDriver) stop(t *testing.T) {
	t.Helper()
	if r.conn == nil {
		return
	}
	r.conn.Close()
	r.conn = nil
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
