package resizer

import (
	"context"
	"path/filepath"
	"sync"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"

	"github.com/volplane/volplane/internal/csi"
	"github.com/volplane/volplane/internal/hostpath"
	"github.com/volplane/volplane/internal/hostpath/hostpathtest"
)

// driver is the bundled hostpath driver served in the test, with a hook
// that can replace its answers; calls counts the CSI calls by method.
type driver struct {
	ep *csi.Endpoint
	mu sync.Mutex
	// answer, if set, answers a call instead of the driver (nil, nil:
	// let the driver answer).
	answer   func(method string, req any) (any, error)
	calls    map[string]int
	lastReq  map[string]any
	nodeOnly bool // hide the controller's EXPAND_VOLUME from the probe
}

const drv = hostpath.DriverName

func startDriver(t *testing.T, nodeOnly bool) *driver {
	t.Helper()
	d := &driver{calls: map[string]int{}, lastReq: map[string]any{}, nodeOnly: nodeOnly}
	ep, err := csi.Dial(context.Background(), hostpathtest.ServeIntercepted(t, "node1", 1<<30, d.intercept), nil)
	if err != nil {
		t.Fatalf("dial the driver: %v", err)
	}
	t.Cleanup(func() { _ = ep.Close() })
	d.ep = ep
	return d
}

func (d *driver) intercept(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
	method := filepath.Base(info.FullMethod)
	d.mu.Lock()
	d.calls[method]++
	d.lastReq[method] = req
	answer := d.answer
	d.mu.Unlock()
	if answer != nil {
		if resp, err := answer(method, req); resp != nil || err != nil {
			return resp, err
		}
	}
	resp, err := h(ctx, req)
	if caps, ok := resp.(*csipb.ControllerGetCapabilitiesResponse); ok && d.nodeOnly {
		var kept []*csipb.ControllerServiceCapability
		for _, c := range caps.GetCapabilities() {
			if c.GetRpc().GetType() != csipb.ControllerServiceCapability_RPC_EXPAND_VOLUME {
				kept = append(kept, c)
			}
		}
		caps.Capabilities = kept
	}
	return resp, err
}

func (d *driver) count(method string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.calls[method]
}

func (d *driver) last(method string) any {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.lastReq[method]
}

func (d *driver) setAnswer(f func(method string, req any) (any, error)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.answer = f
}

// createVolume makes a 1Mi mount volume and returns its handle.
func (d *driver) createVolume(t *testing.T, name string) string {
	t.Helper()
	vol, err := d.ep.CreateVolume(context.Background(), &csipb.CreateVolumeRequest{Name: name,
		CapacityRange: &csipb.CapacityRange{RequiredBytes: 1 << 20},
		VolumeCapabilities: []*csipb.VolumeCapability{{
			AccessType: &csipb.VolumeCapability_Mount{Mount: &csipb.VolumeCapability_MountVolume{}},
			AccessMode: &csipb.VolumeCapability_AccessMode{Mode: csipb.VolumeCapability_AccessMode_SINGLE_NODE_WRITER}}}})
	if err != nil {
		t.Fatalf("CreateVolume: %v", err)
	}
	return vol.GetVolumeId()
}
