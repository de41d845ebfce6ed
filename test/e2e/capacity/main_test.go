// Package capacity runs capacity tracking end to end: everything `volplane
// up` runs (the real kube-apiserver and kube-scheduler, the loops with the
// capacity loop, the node agent, the bundled drivers with storageCapacity
// on) on three simulated nodes whose node-local drivers each hold two
// volumes of claimSize. A tap in front of every node's driver counts what
// each node was asked.
package capacity

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/client-go/rest"

	"github.com/volplane/volplane/internal/cluster"
	"github.com/volplane/volplane/internal/controller/manager"
	"github.com/volplane/volplane/internal/stacktest"
	"github.com/volplane/volplane/test/e2e/support"
)

const (
	claimSize    = "1Gi"
	nodeCapacity = 2 << 30 // two claims of claimSize per node
)

var bed struct {
	cp    *cluster.ControlPlane
	stack *stacktest.Stack
	// writes are the loops' API writes, from their last start.
	writes *stacktest.WriteLog
	// poll is the capacity loop's poll interval at the next start of the
	// loops (0: the default).
	poll  time.Duration
	calls *tap
}

func TestMain(m *testing.M) {
	bed.calls = &tap{}
	cfg := stacktest.StackConfig{Capacity: nodeCapacity, Interceptor: bed.calls.intercept,
		Loops: func(c *manager.Config) {
			bed.writes = stacktest.NewWriteLog(0, nil)
			c.REST = rest.CopyConfig(c.REST)
			c.REST.Wrap(bed.writes.Wrap)
			c.Capacity.PollInterval = bed.poll
		}}
	support.StackMain(m, 3, "vp-cap-", cfg, func(cp *cluster.ControlPlane, s *stacktest.Stack) error {
		bed.cp, bed.stack = cp, s
		return nil
	})
}

// alive fails a wait at once when the loops died.
func alive() error { return bed.stack.EndedEarly() }

// tap records the CreateVolume calls of every node's driver and how each
// was answered, and counts GetCapacity calls.
type tap struct {
	mu      sync.Mutex
	creates []createCall
	asked   int
}

type createCall struct {
	node, name string
	code       codes.Code
}

func (p *tap) intercept(node string) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		resp, err := handler(ctx, req)
		p.mu.Lock()
		defer p.mu.Unlock()
		switch r := req.(type) {
		case *csi.CreateVolumeRequest:
			p.creates = append(p.creates, createCall{node: node, name: r.GetName(), code: status.Code(err)})
		case *csi.GetCapacityRequest:
			p.asked++
		}
		return resp, err
	}
}

// createsOf are the CreateVolume calls for volumes whose names hold one of
// the claim UIDs.
func (p *tap) createsOf(uids ...string) []createCall {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []createCall
	for _, c := range p.creates {
		for _, u := range uids {
			if strings.Contains(c.name, u) {
				out = append(out, c)
			}
		}
	}
	return out
}

func (p *tap) capacityCalls() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.asked
}
