package nodeagent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/errgroup"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/volplane/volplane/internal/controller/loop"
	"github.com/volplane/volplane/internal/csi"
	"github.com/volplane/volplane/internal/mounting"
)

// Agent serves the volumes of the pods of several nodes. Build it with New
// and start it with Run.
type Agent struct {
	cfg     Config
	nodes   map[string]*nodeState
	factory informers.SharedInformerFactory
	// ownsFactory: the agent made its informers and starts and stops them;
	// a factory given in Config is its owner's to start and stop.
	ownsFactory bool

	pods     corelisters.PodLister
	podIndex cache.Indexer
	vaIndex  cache.Indexer
	claims   corelisters.PersistentVolumeClaimLister
	volumes  corelisters.PersistentVolumeLister
	// pvIndex: the PVs by unique volume name (informerindex.VolumeOfPV).
	pvIndex  cache.Indexer
	nodeList corelisters.NodeLister
	drivers  storagelisters.CSIDriverLister
	vas      storagelisters.VolumeAttachmentLister

	podQ, nodeQ workqueue.TypedRateLimitingInterface[string]
	runner      *loop.Runner
	// stats: the claims' usage, refreshed every VolumeStatsAggPeriod
	// (with Config.Metrics).
	stats volumeStats
	// health: what each pod's volume last reported; storage: each node's
	// drivers' storage conditions (csi_node_storage_health_status).
	health  volumeHealthMemory
	storage storageHealth
	// allocQ: "node/driver" keys whose CSINode allocatable count may need
	// asking again; limits: what the attach limit remembers.
	allocQ workqueue.TypedRateLimitingInterface[string]
	limits attachLimits
}

// nodeState is one node's drivers, layout and lock.
type nodeState struct {
	name   string
	layout mounting.Layout
	// endpoints are the node's dialed drivers by driver name, filled by Run.
	endpoints map[string]*csi.Endpoint
	addresses []string
	recorder  record.EventRecorder
	// mu: pod syncs hold it shared, the node sync exclusively.
	mu sync.RWMutex
	// attached: the attached set of the Node object last read
	// (attachedTo).
	attached atomic.Pointer[attachedSet]
}

// New builds the agent and its informers; nothing runs before Run.
func New(cfg Config) (*Agent, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	a := &Agent{cfg: cfg, nodes: map[string]*nodeState{}, factory: cfg.Informers,
		podQ:  loop.NewQueue("nodeagent-pods", retryBase, retryMax),
		nodeQ: loop.NewQueue("nodeagent-nodes", retryBase, retryMax), allocQ: loop.NewQueue("nodeagent-allocatable", retryBase, retryMax)}
	if a.factory == nil {
		a.factory = informers.NewSharedInformerFactoryWithOptions(cfg.Client, 0, informers.WithTransform(loop.Slim))
		a.ownsFactory = true
	}
	if a.cfg.Events == nil {
		a.cfg.Events = record.NewBroadcaster()
		a.cfg.Events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cfg.Client.CoreV1().Events("")})
	}
	for _, n := range cfg.Nodes {
		a.nodes[n.Name] = &nodeState{name: n.Name, addresses: n.Endpoints,
			layout:    mounting.Layout{Root: mounting.NodeRoot(cfg.DataDir, n.Name)},
			endpoints: map[string]*csi.Endpoint{},
			recorder:  a.cfg.Events.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "kubelet", Host: n.Name})}
	}
	synced, err := a.register()
	if err != nil {
		return nil, fmt.Errorf("node agent: %w", err)
	}
	if err := a.registerLimits(); err != nil {
		return nil, fmt.Errorf("node agent: %w", err)
	}
	if cfg.Metrics != nil {
		if err := registerStats(cfg.Metrics, a); err != nil {
			return nil, err
		}
	}
	if cfg.OnUp != nil {
		cfg.OnUp(a.wake)
	}
	a.runner = &loop.Runner{Name: "Node agent", Synced: synced, Workers: cfg.Workers,
		Queues: []loop.Queue{{Q: a.podQ, Sync: a.syncPod}, {Q: a.nodeQ, Sync: a.syncNode}, {Q: a.allocQ, Sync: a.syncAllocatable}},
		Resync: a.resync, ResyncPeriod: cfg.ResyncPeriod, Metrics: cfg.Metrics}
	return a, nil
}

// Run dials every node's drivers, registers them in the nodes' CSINodes,
// starts the informers if they are the agent's own, then serves until ctx
// is done; with Config.UnmountOnStop it then unmounts what its nodes
// mounted.
func (a *Agent) Run(ctx context.Context) (err error) {
	defer a.closeEndpoints()
	if a.cfg.UnmountOnStop {
		// After the workers and pollers stopped, before the endpoints
		// close; also when stopped while starting.
		defer func() { err = errors.Join(err, a.unmountAll(ctx)) }()
	}
	if err := a.registerAll(ctx); err != nil || ctx.Err() != nil {
		return err // nil when stopped while starting: a normal shutdown
	}
	if a.ownsFactory {
		a.factory.Start(ctx.Done())
		defer a.factory.Shutdown()
	}
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() { a.runVolumeProbes(ctx) })
	a.queueAllocatable("")
	return a.runner.Run(ctx, "nodes", len(a.nodes))
}

// Ready reports whether the caches are synced and the workers run.
func (a *Agent) Ready() bool { return a.runner.Ready() }

// registersAtOnce bounds the nodes whose drivers are dialed and registered
// at once: a thousand simulated nodes register in seconds, not minutes,
// and the API server sees a few calls at a time, as from a few kubelets.
const registersAtOnce = 16

// registerAll dials every node's drivers and registers them in its
// CSINode, registersAtOnce nodes at a time; the first failure stops the
// rest. nil when ctx ended first.
func (a *Agent) registerAll(ctx context.Context) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(registersAtOnce)
	for _, n := range a.nodes {
		g.Go(func() error {
			err := a.dial(gctx, n)
			if err == nil {
				err = a.registerCSINode(gctx, n)
			}
			return err
		})
	}
	err := g.Wait()
	if ctx.Err() != nil {
		return nil
	}
	return err
}

func (a *Agent) dial(ctx context.Context, n *nodeState) error {
	dialed := map[string]bool{}
	for _, e := range n.endpoints {
		dialed[e.Address] = true
	}
	for _, addr := range n.addresses {
		if dialed[addr] {
			continue
		}
		e, err := csi.Dial(ctx, addr, nil)
		if err != nil {
			return fmt.Errorf("node agent: node %s: %w", n.name, err)
		}
		if !e.Info.Node {
			_ = e.Close()
			return fmt.Errorf("node agent: node %s: %s serves no node service", n.name, addr)
		}
		n.endpoints[e.Info.Driver] = e
	}
	return nil
}

func (a *Agent) closeEndpoints() {
	for _, n := range a.nodes {
		for _, e := range n.endpoints {
			_ = e.Close()
		}
	}
}
