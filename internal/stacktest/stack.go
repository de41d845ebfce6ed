package stacktest

import (
	"context"
	"fmt"
	"os"

	"google.golang.org/grpc"
	"k8s.io/client-go/rest"

	"github.com/volplane/volplane/internal/bundle"
	"github.com/volplane/volplane/internal/cluster"
	"github.com/volplane/volplane/internal/controller/manager"
	"github.com/volplane/volplane/internal/hostpath"
	"github.com/volplane/volplane/internal/nodeagent"
)

// Stack is what `volplane up` runs on the control plane, for tests and
// benchmarks: the bundled drivers of every node and their objects, the node
// agent of every node, and the loops. The loops and the agent can be
// stopped and started again on their own, as a crash and restart of the
// controller or of the kubelets would.
type Stack struct {
	CP      *cluster.ControlPlane
	Drivers *bundle.Drivers
	// Mounter is shared by every node service and survives restarts, as
	// the kernel's mounts would.
	Mounter *hostpath.FakeMounter
	// Loops are the running loops (nil while stopped).
	Loops *Loops

	cfg   StackConfig
	agent *agentRun
	// down are the nodes taken down (SetNodeDown), as the node agent
	// sees them; it outlives the agent's restarts.
	down nodeagent.DownNodes
}

// StackConfig says how to run the stack.
type StackConfig struct {
	// DataDir holds the drivers' data and the node roots.
	DataDir string
	// Capacity of each driver, in bytes (default 100 GiB).
	Capacity int64
	// Loops adjusts the loops' configuration (every known loop, leader
	// election off, unthrottled, metrics off) before each start.
	Loops func(*manager.Config)
	// AgentREST, if set, adjusts the node agent's client configuration.
	AgentREST func(*rest.Config)
	// Interceptor, if set, wraps each node's node-local driver
	// (bundle.Config.Interceptor).
	Interceptor func(node string) grpc.UnaryServerInterceptor
	// Agent, if set, adjusts the node agent's configuration (its periods,
	// the CSIVolumeHealth gate) before each start.
	Agent func(*manager.Config)
}

// StartStack starts the drivers, registers their objects and starts the
// node agent and the loops.
func StartStack(ctx context.Context, cp *cluster.ControlPlane, cfg StackConfig) (*Stack, error) {
	if cfg.Capacity == 0 {
		cfg.Capacity = 100 << 30
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, err
	}
	s := &Stack{CP: cp, Mounter: hostpath.NewFakeMounter(), cfg: cfg}
	var err error
	s.Drivers, err = bundle.Start(ctx, bundle.Config{DataDir: cfg.DataDir, Nodes: cp.Nodes, Capacity: cfg.Capacity, Mounter: s.Mounter, Interceptor: cfg.Interceptor})
	if err != nil {
		return nil, err
	}
	if err := bundle.Register(ctx, cp.Client); err != nil {
		s.Drivers.Stop()
		return nil, err
	}
	if err := bundle.RegisterSnapshots(ctx, cp.RESTConfig); err != nil {
		s.Drivers.Stop()
		return nil, err
	}
	if err := s.StartAgent(); err != nil {
		s.Drivers.Stop()
		return nil, err
	}
	s.StartLoops()
	return s, nil
}

// DataDir is where the drivers keep their data and the node agent its node
// roots (DataDir/nodes/<node>).
func (s *Stack) DataDir() string { return s.cfg.DataDir }

// LoopsConfig is the loops' configuration StartLoops uses.
func (s *Stack) LoopsConfig() manager.Config {
	rc := rest.CopyConfig(s.CP.RESTConfig)
	rc.QPS, rc.Burst = -1, 0
	cfg := manager.DefaultConfig()
	cfg.REST, cfg.Controllers, cfg.CSIEndpoints = rc, manager.Known(), s.Drivers.Endpoints
	cfg.LeaderElect, cfg.MetricsAddr = false, ""
	if s.cfg.Loops != nil {
		s.cfg.Loops(&cfg)
	}
	return cfg
}

// StartLoops starts the loops (after StopLoops).
func (s *Stack) StartLoops() { s.Loops = StartLoops(s.LoopsConfig()) }

// StopLoops stops the loops and returns what they returned.
func (s *Stack) StopLoops() error {
	if s.Loops == nil {
		return nil
	}
	err := s.Loops.Stop()
	s.Loops = nil
	return err
}

// agentRun is a running node agent.
type agentRun struct {
	cancel context.CancelFunc
	done   chan error
}

// StartAgent starts the node agent of every node (after StopAgent), as
// `volplane up` runs it: the node agent's row of a manager, here a manager
// of its own with that row alone, so that the agent restarts apart from
// the loops. Its client (and its informers') is unthrottled and goes
// through AgentREST.
func (s *Stack) StartAgent() error {
	rc := rest.CopyConfig(s.CP.RESTConfig)
	rc.QPS, rc.Burst = -1, 0
	if s.cfg.AgentREST != nil {
		s.cfg.AgentREST(rc)
	}
	cfg := manager.Config{REST: rc, NodeAgent: &manager.NodeAgent{
		DataDir: s.cfg.DataDir, Nodes: nodeagent.NodesServedBy(s.CP.Nodes, s.Drivers.NodeEndpoints), REST: rc,
		Down: s.down.Down, OnUp: s.down.OnUp}}
	if s.cfg.Agent != nil {
		s.cfg.Agent(&cfg)
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.agent = &agentRun{cancel: cancel, done: make(chan error, 1)}
	go func(done chan error) { done <- manager.Run(ctx, cfg) }(s.agent.done)
	return nil
}

// SetNodeDown takes a simulated node down, as a crashed kubelet (its
// heartbeat stops, its Ready condition turns Unknown, the node agent does
// nothing for it), or brings it up again, as a restarted one. Down, the
// agent stops first, so nothing of it acts on a node already NotReady; up,
// the node reports Ready before the agent wakes.
func (s *Stack) SetNodeDown(ctx context.Context, node string, down bool) error {
	if down {
		s.down.Set(node, true)
		return s.CP.SetNodeDown(ctx, node, true)
	}
	err := s.CP.SetNodeDown(ctx, node, false)
	s.down.Set(node, false)
	return err
}

// AgentRunning says whether the node agent runs (it may have ended on its
// own: see EndedEarly).
func (s *Stack) AgentRunning() bool { return s.agent != nil }

// StopAgent stops the node agent and returns what it returned.
func (s *Stack) StopAgent() error {
	if s.agent == nil {
		return nil
	}
	s.agent.cancel()
	err := <-s.agent.done
	s.agent = nil
	return err
}

// EndedEarly says why a part of the stack ended on its own, or nil.
func (s *Stack) EndedEarly() error {
	if s.Loops != nil {
		if err := s.Loops.EndedEarly(); err != nil {
			return fmt.Errorf("the loops %w", err)
		}
	}
	if s.agent != nil {
		select {
		case err := <-s.agent.done:
			s.agent.done <- err // StopAgent still reads it
			return fmt.Errorf("the node agent ended on its own: %v", err)
		default:
		}
	}
	select {
	case err := <-s.Drivers.Failed():
		return fmt.Errorf("a driver ended on its own: %v", err)
	default:
	}
	return nil
}

// Stop stops the loops, the agent and the drivers.
func (s *Stack) Stop() {
	_ = s.StopLoops()
	_ = s.StopAgent()
	s.Drivers.Stop()
}

// StartTempStack starts a stack whose DataDir is a new temporary directory
// named from prefix (keep it short: unix socket paths are limited to about
// 100 bytes). stop stops the stack and removes the directory; it is also
// how a setup that fails after this call cleans up.
func StartTempStack(ctx context.Context, cp *cluster.ControlPlane, prefix string, cfg StackConfig) (s *Stack, stop func(), err error) {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return nil, nil, err
	}
	cfg.DataDir = dir
	s, err = StartStack(ctx, cp, cfg)
	if err != nil {
		os.RemoveAll(dir)
		return nil, nil, err
	}
	return s, func() { s.Stop(); os.RemoveAll(dir) }, nil
}
