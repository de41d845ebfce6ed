package nodeagent

import (
	"errors"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"

	"github.com/volplane/volplane/internal/controller/loop"
)

// Config is what the agent needs; every dependency is passed in.
type Config struct {
	// Client reads pods, claims, volumes, drivers, attachments and nodes,
	// and writes pod status, node status, CSINodes and events.
	Client kubernetes.Interface
	// DataDir holds the node roots, DataDir/nodes/<node>.
	DataDir string
	// Nodes are the nodes the agent serves.
	Nodes []Node
	// Events sends the events; nil means a broadcaster of the agent's own
	// writing to Client. Each node records as the kubelet does, with
	// source component "kubelet" and the node as host.
	Events record.EventBroadcaster
	// Workers is the number of workers per queue (default loop.DefaultWorkers).
	Workers int
	// ResyncPeriod is how often pods not running yet and every node are
	// revisited (default 15s): a safety net, the agent is event driven.
	ResyncPeriod time.Duration
}

// Node is a node the agent serves.
type Node struct {
	Name string
	// Endpoints are the unix:// sockets of the CSI node services serving
	// the node, one per driver.
	Endpoints []string
}

func (c Config) withDefaults() (Config, error) {
	if c.Client == nil || c.DataDir == "" {
		return c, errors.New("node agent: Client and DataDir are required")
	}
	c.Workers, c.ResyncPeriod = loop.WithDefaults(c.Workers, c.ResyncPeriod)
	return c, nil
}

// Retries of failed syncs (driver errors, conflicts) back off per key from
// retryBase to retryMax, the kubelet's operation backoff.
const (
	retryBase = 500 * time.Millisecond
	retryMax  = 2*time.Minute + 2*time.Second
)
