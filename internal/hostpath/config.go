package hostpath

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/volplane/volplane/internal/endpoint"
	"github.com/volplane/volplane/internal/keyedmutex"

	"google.golang.org/grpc"
	"k8s.io/apimachinery/pkg/util/validation"
)

const (
	// DriverName is the CSI driver name, as in CSIDriver objects and StorageClass provisioners.
	DriverName = "hostpath.csi.volplane.io"
	// NetworkDriverName is the name of the driver in network mode
	// (Config.Network): the same code serving network storage.
	NetworkDriverName = "network.csi.volplane.io"
	// Version is reported as the plugin's vendor version.
	Version = "0.1.0"
	// TopologyKey is the single topology segment this driver reports; its value is the node ID.
	TopologyKey = "topology.volplane.io/node"
)

// Config is everything a Driver needs; New checks it.
type Config struct {
	// Endpoint is where CSI is served: "unix://" followed by an absolute path.
	Endpoint string
	// NodeID names this node (node-local mode only; empty in network mode).
	// It is also the value of the TopologyKey segment,
	// which the kubelet copies onto the Node as a label, so it must be a valid
	// Kubernetes label value.
	NodeID string
	// DataDir holds the volumes, the snapshots and the state file. It is
	// created if missing; one driver at a time may use it.
	DataDir string
	// Capacity is the number of bytes volumes and snapshots may claim in
	// total. It must be positive.
	Capacity int64
	// MaxVolumesPerNode limits how many volumes may be attached to this node
	// (0: no limit). NodeGetInfo reports it so the scheduler can honor it;
	// ControllerPublishVolume enforces it when AttachRequired.
	MaxVolumesPerNode int64
	// AttachRequired turns on ControllerPublishVolume/ControllerUnpublishVolume:
	// volumes must then be attached to the node before the node stages them.
	// Network mode always attaches, whatever this says.
	AttachRequired bool
	// Network serves the driver as network storage (see doc.go): Endpoint
	// serves identity and controller only, for every node of NodeEndpoints;
	// volumes are topology-free; attaching is required.
	Network bool
	// NodeEndpoints (network mode only) maps each node ID to the endpoint
	// serving that node's node service (and identity): "unix://" followed by
	// an absolute path, each different from Endpoint and from one another.
	// ControllerPublishVolume knows exactly these nodes.
	NodeEndpoints map[string]string
	// Mounter mounts and attaches loop devices. Nil means the kernel, through
	// k8s.io/mount-utils and losetup.
	Mounter Mounter
	// Name is the driver name GetPluginInfo reports; "" means DriverName.
	// Tests set another to stand in for a driver the bundled one is not
	// (e.g. the CSI driver an in-tree plugin migrated to).
	Name string
	// TopologyKey is the key of the one topology segment reported; ""
	// means TopologyKey. Its value is always NodeID. Network mode reports
	// no topology.
	TopologyKey string
	// Interceptor, if set, runs around every call, inside the driver's own
	// logging: for tests that watch what the driver is sent or make it
	// answer what a faulty driver would. Nil in production.
	Interceptor grpc.UnaryServerInterceptor
	// Faults, if enabled, makes controller calls fail, time out or wait
	// on purpose (see Faults): for soak tests. Off (zero) in production.
	Faults Faults
	// memberCopied, if set, is called by CreateVolumeGroupSnapshot after it
	// copied each member, with the driver's locks of the group held: for
	// tests of what the group promises.
	memberCopied func(volumeID string)
}

// New checks cfg and returns a Driver ready to Run. It claims nothing yet:
// DataDir and the socket are Run's.
func New(cfg Config) (*Driver, error) {
	socket, err := endpoint.Parse(cfg.Endpoint)
	if err != nil {
		return nil, err
	}
	nodeSockets, err := checkNodes(&cfg, socket)
	if err != nil {
		return nil, err
	}
	if cfg.DataDir == "" {
		return nil, errors.New("data dir is required")
	}
	dataDir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return nil, fmt.Errorf("data dir %q: %w", cfg.DataDir, err)
	}
	if cfg.Capacity <= 0 {
		return nil, fmt.Errorf("capacity must be positive, got %d bytes", cfg.Capacity)
	}
	if cfg.MaxVolumesPerNode < 0 {
		return nil, fmt.Errorf("max volumes per node must be 0 (no limit) or positive, got %d", cfg.MaxVolumesPerNode)
	}
	if err := cfg.Faults.check(); err != nil {
		return nil, err
	}
	cfg.DataDir = dataDir
	if cfg.Name == "" {
		cfg.Name = DriverName
		if cfg.Network {
			cfg.Name = NetworkDriverName
		}
	}
	if cfg.Network {
		cfg.AttachRequired = true
	}
	if cfg.TopologyKey == "" {
		cfg.TopologyKey = TopologyKey
	}
	if cfg.Mounter == nil {
		cfg.Mounter = NewMounter()
	}
	return &Driver{cfg: cfg, socket: socket, nodeSockets: nodeSockets, disk: layout{root: dataDir}, locks: keyedmutex.New(),
		faults: newFaultInjector(cfg.Faults)}, nil
}

// checkNodes checks the node side of cfg and returns the socket path of
// each node service: in node-local mode, NodeID's on the one socket; in
// network mode, each node's own.
func checkNodes(cfg *Config, controllerSocket string) (map[string]string, error) {
	if !cfg.Network {
		if len(cfg.NodeEndpoints) > 0 {
			return nil, errors.New("node endpoints are for network mode only; a node-local driver serves its node on its endpoint")
		}
		return map[string]string{cfg.NodeID: controllerSocket}, checkNodeID(cfg.NodeID)
	}
	if cfg.NodeID != "" {
		return nil, fmt.Errorf("node ID %q: a network driver serves every node of its node endpoints, not one node", cfg.NodeID)
	}
	if len(cfg.NodeEndpoints) == 0 {
		return nil, errors.New("network mode needs node endpoints: one per node served")
	}
	sockets := make(map[string]string, len(cfg.NodeEndpoints))
	taken := map[string]bool{controllerSocket: true}
	for node, address := range cfg.NodeEndpoints {
		if err := checkName("node ID", node); err != nil {
			return nil, fmt.Errorf("node endpoints: %w", err)
		}
		socket, err := endpoint.Parse(address)
		if err != nil {
			return nil, fmt.Errorf("node %s: %w", node, err)
		}
		if taken[socket] {
			return nil, fmt.Errorf("node %s: socket %s is served twice", node, socket)
		}
		taken[socket], sockets[node] = true, socket
	}
	return sockets, nil
}

func checkNodeID(id string) error {
	if id == "" {
		return errors.New("node ID is required")
	}
	if problems := validation.IsValidLabelValue(id); len(problems) > 0 {
		return fmt.Errorf("node ID %q is not a valid Kubernetes label value (it becomes the %s label of the node): %s",
			id, TopologyKey, strings.Join(problems, "; "))
	}
	return nil
}
