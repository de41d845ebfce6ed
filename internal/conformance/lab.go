package conformance

import (
	"context"

	snapclient "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/volplane/volplane/internal/csi"
)

// Lab is a running embedded cluster with one CSI driver under test on it:
// what every scenario reads and acts on. `volplane conformance` builds one
// with the driver `up` would start (bundled or the user's); tests build one
// over the bundled drivers.
type Lab struct {
	// Client and Snapshots talk to the lab's API server as its admin.
	Client    kubernetes.Interface
	Snapshots snapclient.Interface
	// Driver is the driver's name (its CSIDriver's and the classes'
	// provisioner).
	Driver string
	// Controller is what the driver's controller service reported
	// (identity and controller capabilities), Node what one of its node
	// services reported (node capabilities, topology, limits).
	Controller csi.Info
	Node       csi.Info
	// Nodes are the simulated nodes, each served by the driver's node
	// service.
	Nodes []string
	// ImmediateClass and WaitClass are StorageClasses of the driver with
	// volumeBindingMode Immediate and WaitForFirstConsumer, reclaim policy
	// Delete and allowVolumeExpansion true. SnapshotClass and
	// GroupSnapshotClass are its snapshot classes ("" when the driver
	// cannot snapshot, or group-snapshot).
	ImmediateClass, WaitClass         string
	SnapshotClass, GroupSnapshotClass string
	// AttributesClass, if set, is a VolumeAttributesClass of the driver
	// (only when the driver can modify volumes).
	AttributesClass string
	// Endpoints are the driver's controller endpoints (unix://...): the
	// invariant checker lists the driver's volumes and snapshots there.
	Endpoints []string
	// DataDir is the lab's data dir: node roots are
	// mounting.NodeRoot(DataDir, node), a pod's volume is at
	// mounting.Layout's TargetPath.
	DataDir string
	// Restart kills the process serving role ("controller" or a node name)
	// with SIGKILL and starts it again, returning once its socket serves;
	// nil when the lab did not start the driver (--driver-endpoint), and
	// then the kill scenarios are skipped.
	Restart func(ctx context.Context, role string) error
	// Faults turns seeded faults on or off in the loops' calls of the
	// driver's controller service (a proxy in front of its sockets: a call
	// fails before it is done, is done but reported as timed out, or is
	// delayed; hostpath.Faults); InjectedFaults counts the calls faulted so
	// far. Both nil when the lab injects none: the fault scenarios are
	// skipped.
	Faults         func(on bool)
	InjectedFaults func() int64
	// NodeDown takes a simulated node down, as if it crashed (its
	// heartbeat stops, it turns NotReady at once, its node agent does
	// nothing for it), or brings it up again, returning once the node
	// reports Ready and its agent is woken. nil when the lab cannot: the
	// node-failure scenario is skipped.
	NodeDown func(ctx context.Context, node string, down bool) error

	// Facts the user states, since CSI does not report them:
	//
	// Block says the driver takes raw block volumes (volumeMode Block).
	Block bool
	// AccessModes are the modes the driver supports; the scenarios' claims
	// ask for the first (default ReadWriteOnce).
	AccessModes []corev1.PersistentVolumeAccessMode
	// DataPath, if set, maps a pod's target path on a node
	// (mounting.Layout.TargetPath) to where the volume's data is seen: a
	// lab whose mounts are only recorded (hostpath.FakeMounter) follows
	// them to the backend's directory. nil: the target path itself, as on
	// a lab whose driver really mounts.
	DataPath func(target string) string
}
