package resizer

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
	dir, err := os.MkdirTemp("", "vp-rs-") // short: unix socket paths are limited
	if err != nil {
		t.Fatal(err)
	}
	d := &driver{calls: map[string]int{}, lastReq: map[string]any{}, nodeOnly: nodeOnly}
	endpoint := "unix://" + filepath.Join(dir, "csi.sock")
	hp, err := hostpath.New(hostpath.Config{Endpoint: endpoint, NodeID: "node1", DataDir: filepath.Join(dir, "data"),
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
