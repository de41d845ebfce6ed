package hostpath

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"google.golang.org/grpc"
	"k8s.io/apimachinery/pkg/util/validation"
)

const (
	// DriverName is the CSI driver name, as in CSIDriver objects and StorageClass provisioners.
	DriverName = "hostpath.csi.volplane.io"
	// Version is reported as the plugin's vendor version.
	Version = "0.1.0"
	// TopologyKey is the single topology segment this driver reports; its value is the node ID.
	TopologyKey = "topology.volplane.io/node"
)

// unixPrefix is the only endpoint scheme served: the kubelet and the CSI
// sidecars talk to drivers over unix sockets.
const unixPrefix = "unix://"

// maxSocketPath is the longest path a unix socket may have on Linux
// (sun_path holds 108 bytes including the terminating NUL).
const maxSocketPath = 107

// Config is everything a Driver needs; New checks it.
type Config struct {
	// Endpoint is where CSI is served: "unix://" followed by an absolute path.
	Endpoint string
	// NodeID names this node. It is also the value of the TopologyKey segment,
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
	AttachRequired bool
	// Mounter mounts and attaches loop devices. Nil means the kernel, through
	// k8s.io/mount-utils and losetup.
	Mounter Mounter
	// Name is the driver name GetPluginInfo reports; "" means DriverName.
	// Tests set another to stand in for a driver the bundled one is not
	// (e.g. the CSI driver an in-tree plugin migrated to).
	Name string
	// TopologyKey is the key of the one topology segment reported; ""
	// means TopologyKey. Its value is always NodeID.
	TopologyKey string
	// Interceptor, if set, runs around every call, inside the driver's own
	// logging: for tests that watch what the driver is sent or make it
	// answer what a faulty driver would. Nil in production.
	Interceptor grpc.UnaryServerInterceptor
}

// New checks cfg and returns a Driver ready to Run. It claims nothing yet:
// DataDir and the socket are Run's.
func New(cfg Config) (*Driver, error) {
	socket, err := socketPath(cfg.Endpoint)
	if err != nil {
		return nil, err
	}
	if err := checkNodeID(cfg.NodeID); err != nil {
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
	cfg.DataDir = dataDir
	if cfg.Name == "" {
		cfg.Name = DriverName
	}
	if cfg.TopologyKey == "" {
		cfg.TopologyKey = TopologyKey
	}
	if cfg.Mounter == nil {
		cfg.Mounter = NewMounter()
	}
	return &Driver{cfg: cfg, socket: socket, disk: layout{root: dataDir}, locks: newKeyedMutex()}, nil
}

// socketPath turns "unix:///run/csi.sock" into "/run/csi.sock".
func socketPath(endpoint string) (string, error) {
	if endpoint == "" {
		return "", errors.New("endpoint is required (unix:///path/to/csi.sock)")
	}
	path, ok := strings.CutPrefix(endpoint, unixPrefix)
	if !ok {
		return "", fmt.Errorf("endpoint %q is not supported: only unix sockets are served (unix:///path/to/csi.sock)", endpoint)
	}
	if !filepath.IsAbs(path) {
		return "", fmt.Errorf("endpoint %q: the socket path must be absolute (unix:///path/to/csi.sock)", endpoint)
	}
	path = filepath.Clean(path)
	if len(path) > maxSocketPath {
		return "", fmt.Errorf("endpoint %q: the socket path is %d bytes, longer than the %d a unix socket allows", endpoint, len(path), maxSocketPath)
	}
	return path, nil
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
