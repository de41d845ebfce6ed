package modifier

import (
	"context"
	"sync"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"

	"github.com/volplane/volplane/internal/csi"
	"github.com/volplane/volplane/internal/hostpath/hostpathtest"
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
	d := &testDriver{}
	ep, err := csi.Dial(context.Background(), hostpathtest.ServeIntercepted(t, "node-1", 1<<30, d.intercept), nil)
	if err != nil {
		t.Fatalf("dial the driver: %v", err)
	}
	t.Cleanup(func() { _ = ep.Close() })
	d.ep = ep
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
