package manager

import (
	"errors"
	"fmt"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/volplane/volplane/internal/features"
	"github.com/volplane/volplane/internal/nodeagent"
)

// NodeAgentLoop is the node agent's row: kubelet's volume-manager role for
// simulated nodes (internal/nodeagent). It is selected by Config.NodeAgent,
// not by --controllers: only `volplane up` and the test harness, which
// simulate nodes, run it.
const NodeAgentLoop = "nodeagent"

// The agent's own client limits, unless NodeAgent.REST says otherwise:
// the simulated nodes share one API server that is ours alone.
const (
	nodeAgentQPS       = 200
	nodeAgentBurst     = 400
	nodeAgentUserAgent = "volplane-node-agent"
)

// NodeAgent says which simulated nodes the manager serves as their node
// agent.
type NodeAgent struct {
	// DataDir holds the node roots, DataDir/nodes/<node>.
	DataDir string
	// Nodes are the nodes served, each with its CSI node services.
	Nodes []nodeagent.Node
	// REST, if set, is the agent's own client configuration; nil: the
	// manager's REST with QPS 200, burst 400 and user agent
	// volplane-node-agent. The agent writes through a client of its own,
	// so that its writes (pod and node status, events) never wait on the
	// loops' budget; it reads through the manager's shared informers.
	REST *rest.Config
	// VolumeStatsAggPeriod is how often the volumes' stats and health are
	// asked of the drivers (0: the kubelet's 1 minute).
	VolumeStatsAggPeriod time.Duration
	// UnmountOnStop: a clean stop unmounts what the nodes mounted
	// (nodeagent.Config.UnmountOnStop).
	UnmountOnStop bool
	// Down and OnUp take simulated nodes down and bring them up, as
	// crashed and restarted kubelets (nodeagent.Config.Down and OnUp;
	// nodeagent.DownNodes gives both). Nil: no node is ever down.
	Down func(node string) bool
	OnUp func(wake func(node string))
}

func (n *NodeAgent) validate(cfg Config) error {
	switch {
	case n.DataDir == "":
		return errors.New("the node agent needs a data dir")
	case len(n.Nodes) == 0:
		return errors.New("the node agent needs at least one node")
	case cfg.LeaderElect:
		// Each node's agent serves its own node: nothing to elect, and a
		// standby would leave the node's pods unmounted.
		return errors.New("the node agent does not run under leader election")
	}
	return nil
}

// newNodeAgent builds the node agent over the shared informers, with its
// own client.
func newNodeAgent(w wiring) ([]Runnable, error) {
	na, gate := w.Config.NodeAgent, w.Config.Gates().Enabled(features.CSIVolumeHealth)
	rc := na.REST
	if rc == nil {
		rc = rest.CopyConfig(w.Config.REST)
		rc.QPS, rc.Burst, rc.UserAgent = nodeAgentQPS, nodeAgentBurst, nodeAgentUserAgent
	}
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return nil, fmt.Errorf("node agent client: %w", err)
	}
	a, err := nodeagent.New(nodeagent.Config{Client: client, Informers: w.Informers, Metrics: w.Metrics,
		DataDir: na.DataDir, Nodes: na.Nodes, VolumeStatsAggPeriod: na.VolumeStatsAggPeriod, UnmountOnStop: na.UnmountOnStop,
		Down: na.Down, OnUp: na.OnUp, WriteHealth: func() bool { return gate }})
	if err != nil {
		return nil, err
	}
	return []Runnable{a}, nil
}
