package snapshotter

import (
	"context"
	"maps"
	"path/filepath"
	"sync"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
)

// call is one snapshot call a driver was sent.
type call struct {
	node, method string
	// name, source and params: CreateSnapshot's; id: DeleteSnapshot's.
	name, source, id string
	params, secrets  map[string]string
}

// driverCalls records every snapshot call of every node's driver, and
// runs a test's fault around CreateSnapshot of a given name.
type driverCalls struct {
	mu     sync.Mutex
	calls  []call
	faults map[string]func(ctx context.Context, h func() (any, error)) (any, error)
}

func newDriverCalls() *driverCalls {
	return &driverCalls{faults: map[string]func(context.Context, func() (any, error)) (any, error){}}
}

func (d *driverCalls) interceptor(node string) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		c := call{node: node, method: filepath.Base(info.FullMethod)}
		var fault func(context.Context, func() (any, error)) (any, error)
		switch r := req.(type) {
		case *csipb.CreateSnapshotRequest:
			c.name, c.source, c.params, c.secrets = r.GetName(), r.GetSourceVolumeId(), maps.Clone(r.GetParameters()), maps.Clone(r.GetSecrets())
			d.mu.Lock()
			fault = d.faults[r.GetName()]
			d.mu.Unlock()
		case *csipb.DeleteSnapshotRequest:
			c.id, c.secrets = r.GetSnapshotId(), maps.Clone(r.GetSecrets())
		default:
			return h(ctx, req)
		}
		d.mu.Lock()
		d.calls = append(d.calls, c)
		d.mu.Unlock()
		if fault != nil {
			return fault(ctx, func() (any, error) { return h(ctx, req) })
		}
		return h(ctx, req)
	}
}

// fault runs f around every CreateSnapshot of name (nil: none).
func (d *driverCalls) fault(name string, f func(ctx context.Context, h func() (any, error)) (any, error)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if f == nil {
		delete(d.faults, name)
		return
	}
	d.faults[name] = f
}

// of are the calls of method whose name (CreateSnapshot) or id
// (DeleteSnapshot) is key.
func (d *driverCalls) of(method, key string) []call {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []call
	for _, c := range d.calls {
		if c.method == method && (c.name == key || c.id == key) {
			out = append(out, c)
		}
	}
	return out
}
