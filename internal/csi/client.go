package csi

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/volplane/volplane/internal/endpoint"
)

// Timeouts of one call each. CreateVolume may copy a whole source volume,
// hence the longer one; a timed-out call is Transient and is retried with
// the same name, so the driver's idempotency picks up where it left off.
const (
	dialTimeout   = 30 * time.Second
	probeTimeout  = 30 * time.Second
	createTimeout = 5 * time.Minute
	deleteTimeout = 2 * time.Minute
	listTimeout   = time.Minute
)

// listPage is the most entries a list call (ListVolumes, ListSnapshots,
// ControllerListVolumeHealth) asks for at once: without max_entries a
// driver answers with everything in one message, and gRPC refuses a message
// over 4 MiB (about 80,000 volumes of the bundled driver).
const listPage = 1000

// Info is what a probe learned about the driver behind an endpoint.
type Info struct {
	Driver string
	// Controller: the endpoint serves the controller service. A driver
	// deployed in parts serves some nodes' node services on sockets without
	// it (the bundled network driver); the flags below up to Publish are
	// then false.
	Controller bool
	// Accessibility: the driver has VOLUME_ACCESSIBILITY_CONSTRAINTS, so
	// CreateVolume takes topology requirements and answers with topology.
	Accessibility bool
	Clone         bool
	List          bool
	// GetCapacity: GET_CAPACITY, so the capacity loop publishes what the
	// driver can still hand out.
	GetCapacity bool
	// Publish: the driver has PUBLISH_UNPUBLISH_VOLUME, so its volumes are
	// attached to nodes (VolumeAttachments) before use.
	Publish bool
	// PublishReadOnly: PUBLISH_READONLY, so ControllerPublishVolume honors
	// readonly; SingleNodeMultiWriter: SINGLE_NODE_MULTI_WRITER, so
	// ReadWriteOnce and ReadWriteOncePod map to the finer CSI modes.
	PublishReadOnly       bool
	SingleNodeMultiWriter bool
	// ControllerExpand: the controller has EXPAND_VOLUME, so the resizer
	// calls ControllerExpandVolume; Modify: MODIFY_VOLUME, so volumes take
	// mutable parameters (VolumeAttributesClasses) at creation and through
	// ControllerModifyVolume.
	ControllerExpand bool
	Modify           bool
	// Snapshot: CREATE_DELETE_SNAPSHOT; ListSnapshots: LIST_SNAPSHOTS (the
	// sidecar checks a pre-provisioned snapshot's readiness with it);
	// GetSnapshot: GET_SNAPSHOT.
	Snapshot, ListSnapshots, GetSnapshot bool
	// VolumeHealth: GET_VOLUME_HEALTH, so ControllerGetVolumeHealth answers;
	// ListVolumeHealth: LIST_VOLUME_HEALTH, so ControllerListVolumeHealth
	// does (the health monitor lists when it can, as the
	// external-health-monitor does).
	VolumeHealth, ListVolumeHealth bool
	// GroupSnapshot: the GroupController service has
	// CREATE_DELETE_GET_VOLUME_GROUP_SNAPSHOT.
	GroupSnapshot bool
	// OnlineExpansion and OfflineExpansion are the plugin's VolumeExpansion
	// capability: whether a volume may grow while in use by a node.
	OnlineExpansion, OfflineExpansion bool
	// Node: the endpoint serves the node service; Topology is then the
	// segment NodeGetInfo reported (possibly empty).
	Node     bool
	NodeID   string
	Topology map[string]string
	// MaxVolumes is the most volumes NodeGetInfo says the node can take
	// (0: no limit reported); a CSINode's allocatable count.
	MaxVolumes int64
	// Stage: the node service has STAGE_UNSTAGE_VOLUME, so a volume is
	// staged once per node before it is published to each pod.
	Stage bool
	// Expand: the node service has EXPAND_VOLUME.
	Expand bool
	// NodeSingleNodeMultiWriter: the node service has
	// SINGLE_NODE_MULTI_WRITER, so the kubelet maps ReadWriteOnce and
	// ReadWriteOncePod to the finer CSI modes in its node calls;
	// VolumeMountGroup: VOLUME_MOUNT_GROUP, so the pod's fsGroup goes to
	// the driver in NodeStageVolume and NodePublishVolume.
	NodeSingleNodeMultiWriter, VolumeMountGroup bool
	// VolumeStats: GET_VOLUME_STATS, so the kubelet reports a published
	// volume's usage (NodeGetVolumeStats).
	VolumeStats bool
	// NodeVolumeHealth: the node service's GET_VOLUME_HEALTH
	// (NodeGetVolumeHealth); StorageHealth: GET_STORAGE_HEALTH
	// (NodeGetStorageHealth).
	NodeVolumeHealth, StorageHealth bool
}

// Endpoint is one dialed driver socket.
type Endpoint struct {
	Address string
	Info    Info

	conn       *grpc.ClientConn
	controller csi.ControllerClient
	node       csi.NodeClient
	group      csi.GroupControllerClient
	metrics    *Metrics
}

// Dial connects to "unix:///absolute/path", waits until the connection is
// ready (at most 30 s or until ctx ends) and probes the driver. metrics may
// be nil.
func Dial(ctx context.Context, address string, metrics *Metrics) (*Endpoint, error) {
	path, err := endpoint.Parse(address)
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("csi endpoint %s: no socket: %w", address, err)
	}
	dialer := func(ctx context.Context, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}
	conn, err := grpc.NewClient("passthrough:///"+path,
		grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithContextDialer(dialer))
	if err != nil {
		return nil, fmt.Errorf("csi endpoint %s: %w", address, err)
	}
	e := &Endpoint{Address: address, conn: conn, controller: csi.NewControllerClient(conn), node: csi.NewNodeClient(conn),
		group: csi.NewGroupControllerClient(conn), metrics: metrics}
	if err := e.waitConnected(ctx); err != nil {
		_ = conn.Close()
		return nil, err
	}
	if e.Info, err = e.probe(ctx); err != nil {
		_ = conn.Close()
		return nil, fmt.Errorf("csi endpoint %s: %w", address, err)
	}
	return e, nil
}

func (e *Endpoint) waitConnected(parent context.Context) error {
	ctx, cancel := context.WithTimeout(parent, dialTimeout)
	defer cancel()
	e.conn.Connect()
	for {
		s := e.conn.GetState()
		if s == connectivity.Ready {
			return nil
		}
		if !e.conn.WaitForStateChange(ctx, s) {
			if parent.Err() != nil {
				return fmt.Errorf("csi endpoint %s: %w", e.Address, parent.Err())
			}
			return fmt.Errorf("csi endpoint %s: not connected after %s (state %s)", e.Address, dialTimeout, s)
		}
	}
}

// Close closes the connection.
func (e *Endpoint) Close() error { return e.conn.Close() }

func (e *Endpoint) probe(ctx context.Context) (Info, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	ids := csi.NewIdentityClient(e.conn)
	var info Info
	pi, err := ids.GetPluginInfo(ctx, &csi.GetPluginInfoRequest{})
	if err != nil {
		return info, fmt.Errorf("GetPluginInfo: %w", err)
	}
	if info.Driver = pi.GetName(); info.Driver == "" {
		return info, errors.New("GetPluginInfo: the driver has no name")
	}
	pc, err := ids.GetPluginCapabilities(ctx, &csi.GetPluginCapabilitiesRequest{})
	if err != nil {
		return info, fmt.Errorf("GetPluginCapabilities: %w", err)
	}
	for _, c := range pc.GetCapabilities() {
		if c.GetService().GetType() == csi.PluginCapability_Service_VOLUME_ACCESSIBILITY_CONSTRAINTS {
			info.Accessibility = true
		}
		switch c.GetVolumeExpansion().GetType() {
		case csi.PluginCapability_VolumeExpansion_ONLINE:
			info.OnlineExpansion = true
		case csi.PluginCapability_VolumeExpansion_OFFLINE:
			info.OfflineExpansion = true
		}
	}
	cc, err := e.controller.ControllerGetCapabilities(ctx, &csi.ControllerGetCapabilitiesRequest{})
	switch {
	case status.Code(err) == codes.Unimplemented:
	case err != nil:
		return info, fmt.Errorf("ControllerGetCapabilities: %w", err)
	default:
		info.Controller = true
	}
	for _, c := range cc.GetCapabilities() {
		switch c.GetRpc().GetType() {
		case csi.ControllerServiceCapability_RPC_CLONE_VOLUME:
			info.Clone = true
		case csi.ControllerServiceCapability_RPC_LIST_VOLUMES:
			info.List = true
		case csi.ControllerServiceCapability_RPC_GET_CAPACITY:
			info.GetCapacity = true
		case csi.ControllerServiceCapability_RPC_PUBLISH_UNPUBLISH_VOLUME:
			info.Publish = true
		case csi.ControllerServiceCapability_RPC_PUBLISH_READONLY:
			info.PublishReadOnly = true
		case csi.ControllerServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER:
			info.SingleNodeMultiWriter = true
		case csi.ControllerServiceCapability_RPC_EXPAND_VOLUME:
			info.ControllerExpand = true
		case csi.ControllerServiceCapability_RPC_MODIFY_VOLUME:
			info.Modify = true
		case csi.ControllerServiceCapability_RPC_CREATE_DELETE_SNAPSHOT:
			info.Snapshot = true
		case csi.ControllerServiceCapability_RPC_LIST_SNAPSHOTS:
			info.ListSnapshots = true
		case csi.ControllerServiceCapability_RPC_GET_SNAPSHOT:
			info.GetSnapshot = true
		case csi.ControllerServiceCapability_RPC_GET_VOLUME_HEALTH:
			info.VolumeHealth = true
		case csi.ControllerServiceCapability_RPC_LIST_VOLUME_HEALTH:
			info.ListVolumeHealth = true
		}
	}
	gc, err := e.group.GroupControllerGetCapabilities(ctx, &csi.GroupControllerGetCapabilitiesRequest{})
	switch {
	case status.Code(err) == codes.Unimplemented:
	case err != nil:
		return info, fmt.Errorf("GroupControllerGetCapabilities: %w", err)
	}
	for _, c := range gc.GetCapabilities() {
		if c.GetRpc().GetType() == csi.GroupControllerServiceCapability_RPC_CREATE_DELETE_GET_VOLUME_GROUP_SNAPSHOT {
			info.GroupSnapshot = true
		}
	}
	ni, err := e.node.NodeGetInfo(ctx, &csi.NodeGetInfoRequest{})
	switch {
	case status.Code(err) == codes.Unimplemented:
		return info, nil
	case err != nil:
		return info, fmt.Errorf("NodeGetInfo: %w", err)
	}
	info.Node, info.NodeID = true, ni.GetNodeId()
	info.Topology = ni.GetAccessibleTopology().GetSegments()
	info.MaxVolumes = ni.GetMaxVolumesPerNode()
	nc, err := e.node.NodeGetCapabilities(ctx, &csi.NodeGetCapabilitiesRequest{})
	if err != nil {
		return info, fmt.Errorf("NodeGetCapabilities: %w", err)
	}
	setNodeCapabilities(&info, nc.GetCapabilities())
	return info, nil
}

// CreateVolume calls the driver with a timeout of its own.
func (e *Endpoint) CreateVolume(ctx context.Context, req *csi.CreateVolumeRequest) (*csi.Volume, error) {
	resp, err := timed(ctx, e, "CreateVolume", createTimeout, e.controller.CreateVolume, req)
	if err != nil {
		return nil, err
	}
	return resp.GetVolume(), nil
}

// DeleteVolume calls the driver with a timeout of its own; secrets are the
// provisioner secret's data (nil without one).
func (e *Endpoint) DeleteVolume(ctx context.Context, volumeID string, secrets map[string]string) error {
	_, err := timed(ctx, e, "DeleteVolume", deleteTimeout, e.controller.DeleteVolume,
		&csi.DeleteVolumeRequest{VolumeId: volumeID, Secrets: secrets})
	return err
}

// ListVolumes returns every volume the endpoint reports, following pages.
func (e *Endpoint) ListVolumes(ctx context.Context) ([]*csi.ListVolumesResponse_Entry, error) {
	ctx, cancel := context.WithTimeout(ctx, listTimeout)
	defer cancel()
	var out []*csi.ListVolumesResponse_Entry
	token := ""
	for {
		start := time.Now()
		resp, err := e.controller.ListVolumes(ctx, &csi.ListVolumesRequest{MaxEntries: listPage, StartingToken: token})
		e.metrics.observe(e.Info.Driver, "ListVolumes", err, start)
		if err != nil {
			return nil, err
		}
		out = append(out, resp.GetEntries()...)
		if token = resp.GetNextToken(); token == "" {
			return out, nil
		}
	}
}

// timed makes one call of the driver under timeout and observes it in the
// metrics under method.
func timed[Req, Resp any](ctx context.Context, e *Endpoint, method string, timeout time.Duration,
	rpc func(context.Context, Req, ...grpc.CallOption) (Resp, error), req Req) (Resp, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	resp, err := rpc(ctx, req)
	e.metrics.observe(e.Info.Driver, method, err, start)
	return resp, err
}
