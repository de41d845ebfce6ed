package nodeagent

import (
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/volplane/volplane/internal/controller/loop"
	"github.com/volplane/volplane/internal/mounting"
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
	// Informers, if set, is the process's shared informer factory (the
	// manager's, when the agent runs as one of its loops): the agent
	// registers its informers, indexes and handlers on it and neither
	// starts nor stops it; its owner does, after New. Nil: the agent makes
	// its own over Client, and starts and stops it in Run.
	Informers informers.SharedInformerFactory
	// Metrics, if set, takes the loop runner's stuck-key metrics and the
	// kubelet's volume stats of the published claims
	// (kubelet_volume_stats_*, with a node label).
	Metrics prometheus.Registerer
	// Events sends the events; nil means a broadcaster of the agent's own
	// writing to Client. Each node records as the kubelet does, with
	// source component "kubelet" and the node as host.
	Events record.EventBroadcaster
	// Clock stamps the conditions the agent writes (default: the wall
	// clock).
	Clock clock.PassiveClock
	// Workers is the number of workers per queue (default loop.DefaultWorkers).
	Workers int
	// VolumeStatsAggPeriod is how often the claims' usage is asked of the
	// drivers and cached for the scrapes (with Metrics), the kubelet's
	// volumeStatsAggPeriod (default 1m).
	VolumeStatsAggPeriod time.Duration
	// WriteHealth says whether the CSIVolumeHealth gate is on: the pods'
	// status.volumeHealth and the CSINodes' status.storageHealth are
	// written beside the events (default: off, events only).
	WriteHealth func() bool
	// PodAttachAndMountTimeout is how long a pod may wait for its
	// attachments before a wait for one the node has no room for
	// (ResourceExhausted) rejects it, the kubelet's podAttachAndMountTimeout
	// (default mounting.PodAttachAndMountTimeout, 2m3s).
	PodAttachAndMountTimeout time.Duration
	// UnmountOnStop: when Run ends, every volume the nodes' disks record
	// as staged or published is unpublished and unstaged through its
	// driver, without any API write (mounting.StopPlan); the next start
	// mounts again what the running pods need. For `volplane up`, whose
	// stop must leave nothing mounted under its data dir.
	UnmountOnStop bool
	// Down, if set, says which nodes are down, as if their kubelets had
	// crashed: the agent neither mounts nor tears down anything for them
	// and writes nothing about them (pod status, volumesInUse, pod
	// deletions), so a pod deleted there stays Terminating until the
	// cluster forces it out (the out-of-service taint and pod GC). Nil:
	// no node is ever down. DownNodes.Down is one.
	Down func(node string) bool
	// OnUp, if set, is given the agent's wake function in New; call it
	// with a node that was Down and is up again, and the agent revisits
	// the node and its pods at once (else at its next resync).
	// DownNodes.OnUp is one.
	OnUp func(wake func(node string))
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

// NodesServedBy are the named nodes, each with the node services that
// endpoints (node → sockets) lists for it, as the bundled drivers report
// them.
func NodesServedBy(names []string, endpoints map[string][]string) []Node {
	out := make([]Node, 0, len(names))
	for _, name := range names {
		out = append(out, Node{Name: name, Endpoints: endpoints[name]})
	}
	return out
}

func (c Config) withDefaults() (Config, error) {
	if c.Client == nil || c.DataDir == "" {
		return c, errors.New("node agent: Client and DataDir are required")
	}
	if c.Clock == nil {
		c.Clock = clock.RealClock{}
	}
	if c.Down == nil {
		c.Down = func(string) bool { return false }
	}
	if c.WriteHealth == nil {
		c.WriteHealth = func() bool { return false }
	}
	c.Workers, c.ResyncPeriod = loop.WithDefaults(c.Workers, c.ResyncPeriod)
	if c.PodAttachAndMountTimeout <= 0 {
		c.PodAttachAndMountTimeout = mounting.PodAttachAndMountTimeout
	}
	if c.VolumeStatsAggPeriod <= 0 {
		c.VolumeStatsAggPeriod = DefaultVolumeStatsAggPeriod
	}
	return c, nil
}

// DefaultVolumeStatsAggPeriod is the kubelet's default volumeStatsAggPeriod.
const DefaultVolumeStatsAggPeriod = time.Minute

// Retries of failed syncs (driver errors, conflicts) back off per key from
// retryBase to retryMax, the kubelet's operation backoff.
const (
	retryBase = 500 * time.Millisecond
	retryMax  = 2*time.Minute + 2*time.Second
)
