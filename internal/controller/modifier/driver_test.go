package modifier

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"

	"github.com/volplane/volplane/internal/csi"
	"github.com/volplane/volplane/internal/hostpath"
)

// testDriver is the bundled driver served in the test, with a hook that
// may answer ControllerModifyVolume in its place and a count of those calls.
type testDriver struct {
	ep *csi.Endpoint
	mu sync.Mutex
	// answer, if set, answers ControllerModifyVolume instead of the driver
	// when it returns an error.
	answer   func(*csipb.ControllerModifyVolumeRequest) error
	modifies int
	last     *csipb.ControllerModifyVolumeRequest
}

func serveDriver(t *testing.T) *testDriver {
	t.Helper()
	dir, err := os.MkdirTemp("", "vp-mod-") // short: unix socket paths are limited
	if err != nil {
		t.Fatal(err)
	}
	d := &testDriver{}
	endpoint := "unix://" + filepath.Join(dir, "csi.sock")
	hp, err := hostpath.New(hostpath.Config{Endpoint: endpoint, NodeID: "node-1", DataDir: filepath.Join(dir, "data"),
		Capacity: 1 << 30, Mounter: hostpath.NewFakeMounter(), Interceptor: d.intercept})
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = hp.Run(ctx); close(done) }()
	for end := time.Now().Add(20 * time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if d.ep, err = csi.Dial(ctx, endpoint, nil); err == nil {
			break
		}
	}
	t.Cleanup(func() {
		if d.ep != nil {
			_ = d.ep.Close()
		}
		stop()
		<-done
		_ = os.RemoveAll(dir)
	})
	if err != nil {
		t.Fatalf("dial the driver: %v", err)
	}
	return d
}

func (d *testDriver) intercept(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	r, ok := req.(*csipb.ControllerModifyVolumeRequest)
	if !ok {
		return h(ctx, req)
	}
	d.mu.Lock()
	d.modifies++
	d.last = r
	answer := d.answer
	d.mu.Unlock()
	if answer != nil {
		if err := answer(r); err != nil {
			return nil, err
		}
	}
	return h(ctx, req)
}

func (d *testDriver) calls() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.modifies
}

func (d *testDriver) setAnswer(a func(*csipb.ControllerModifyVolumeRequest) error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.answer = a
}

// createVolume makes a volume with mutable parameters and returns its ID.
func (d *testDriver) createVolume(t *testing.T, name string, params map[string]string) string {
	t.Helper()
	vol, err := d.ep.CreateVolume(context.Background(), &csipb.CreateVolumeRequest{Name: name, MutableParameters: params,
		CapacityRange: &csipb.CapacityRange{RequiredBytes: 1 << 20},
		VolumeCapabilities: []*csipb.VolumeCapability{{
			AccessMode: &csipb.VolumeCapability_AccessMode{Mode: csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
			AccessType: &csipb.VolumeCapability_Mount{Mount: &csipb.VolumeCapability_MountVolume{}}}}})
	if err != nil {
		t.Fatal(err)
	}
	return vol.GetVolumeId()
}
