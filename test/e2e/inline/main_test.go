// Package inline runs CSI inline ephemeral volumes end to end with
// everything `volplane up` runs (stacktest.Stack) against the embedded,
// real kube-apiserver: the bundled node-local driver's CSIDriver lists the
// Ephemeral mode, the node agent publishes a pod's inline volume as the
// kubelet does, the driver creates it at publish and deletes it at
// unpublish. A FakeMounter stands in for the kernel: the volume's data is
// the driver's directory, which a test writes into as the pod would
// through its mount.
package inline

import (
	"context"
	"os"
	"sync"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/volplane/volplane/internal/cluster"
	"github.com/volplane/volplane/internal/stacktest"
	"github.com/volplane/volplane/test/e2e/support"
)

var stack *stacktest.Stack

// calls records the node calls every node-local driver is sent.
var calls struct {
	mu   sync.Mutex
	seen []call
}

type call struct {
	node, method, volume string
	req                  proto.Message
}

func record(node string) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if r, ok := req.(interface{ GetVolumeId() string }); ok {
			calls.mu.Lock()
			calls.seen = append(calls.seen, call{node: node, method: info.FullMethod, volume: r.GetVolumeId(), req: proto.Clone(req.(proto.Message))})
			calls.mu.Unlock()
		}
		return handler(ctx, req)
	}
}

// callsOf are the calls of method (its short name, "NodePublishVolume")
// naming the volume.
func callsOf(method, volume string) []proto.Message {
	calls.mu.Lock()
	defer calls.mu.Unlock()
	var out []proto.Message
	for _, c := range calls.seen {
		if c.volume == volume && c.method == "/"+csipb.Node_ServiceDesc.ServiceName+"/"+method {
			out = append(out, c.req)
		}
	}
	return out
}

func TestMain(m *testing.M) {
	support.StackMain(m, 1, "vp-il-", stacktest.StackConfig{Interceptor: record},
		func(_ *cluster.ControlPlane, s *stacktest.Stack) error { stack = s; return nil })
}

func exists(path string) (bool, error) {
	_, err := os.Stat(path)
	if os.IsNotExist(err) {
		return false, nil
	}
	return err == nil, err
}
