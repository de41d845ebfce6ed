// Package provisioning runs dynamic provisioning end to end: the binder and
// the provisioner against the embedded, real kube-apiserver and scheduler,
// with one bundled hostpath CSI driver served per simulated node. Tests check
// what a user sees (claims, PVs, events) and what the storage backend holds,
// listed over CSI from every node's driver.
//
// Tests run one at a time. Each works in its own namespace, removes what it
// made, and ends with the invariant checker.
package provisioning

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/cluster"
	"github.com/volplane/volplane/internal/hostpath"
	"github.com/volplane/volplane/test/e2e/support"
)

// nodeCapacity is what each node's driver may hand out in total: small, so
// that one claim can ask for more than any node has.
const nodeCapacity = 1 << 30

// The classes every test may use, created once. Their names say what they do.
const (
	classImmediate = "hostpath-immediate" // Immediate, Delete, with mount options
	classRetain    = "hostpath-retain"    // Immediate, Retain
	classWait      = "hostpath-wffc"      // WaitForFirstConsumer, Delete
	classBadParam  = "hostpath-bad-param" // a parameter in the reserved csi.storage.k8s.io/ namespace no provisioner knows
)

// badParamKey is the parameter classBadParam carries.
const badParamKey = "csi.storage.k8s.io/no-such-parameter"

// classMountOptions are classImmediate's; its PVs must carry them.
var classMountOptions = []string{"noatime", "nodiratime"}

// bed is the package's test bed: the drivers, and the loops most tests run
// against. Tests that need loops of their own stop the shared ones first.
var bed struct {
	drivers []*nodeDriver
	shared  *loops
}

func TestMain(m *testing.M) {
	support.Main(m, 2, setUp)
}

func setUp(cp *cluster.ControlPlane) (func(), error) {
	drivers, err := support.NewDrivers("vp-prov-")
	if err != nil {
		return nil, err
	}
	teardown := func() {
		if bed.shared != nil {
			_ = bed.shared.Stop()
		}
		drivers.Stop()
	}
	for _, node := range cp.Nodes {
		d, err := serveDriver(drivers, node)
		if err != nil {
			teardown()
			return nil, err
		}
		bed.drivers = append(bed.drivers, d)
	}
	if err := registerStorage(context.Background(), cp.Client); err != nil {
		teardown()
		return nil, err
	}
	bed.shared = startLoops(cp.RESTConfig, provisionerAndBinder...)
	return teardown, nil
}

// registerStorage creates the CSIDriver of the bundled driver and the test
// classes. The drivers run with attach required (PUBLISH_UNPUBLISH_VOLUME),
// so the provisioner refuses to delete a volume a VolumeAttachment still
// names; no attacher runs here, so only tests make VolumeAttachments.
func registerStorage(ctx context.Context, client kubernetes.Interface) error {
	driver := &storagev1.CSIDriver{
		ObjectMeta: metav1.ObjectMeta{Name: hostpath.DriverName},
		Spec:       storagev1.CSIDriverSpec{AttachRequired: ptr.To(true)},
	}
	if _, err := client.StorageV1().CSIDrivers().Create(ctx, driver, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("CSIDriver: %w", err)
	}
	immediate, wait := storagev1.VolumeBindingImmediate, storagev1.VolumeBindingWaitForFirstConsumer
	del, retain := corev1.PersistentVolumeReclaimDelete, corev1.PersistentVolumeReclaimRetain
	classes := []*storagev1.StorageClass{
		{ObjectMeta: metav1.ObjectMeta{Name: classImmediate}, VolumeBindingMode: &immediate, ReclaimPolicy: &del,
			MountOptions: classMountOptions},
		{ObjectMeta: metav1.ObjectMeta{Name: classRetain}, VolumeBindingMode: &immediate, ReclaimPolicy: &retain},
		{ObjectMeta: metav1.ObjectMeta{Name: classWait}, VolumeBindingMode: &wait, ReclaimPolicy: &del},
		{ObjectMeta: metav1.ObjectMeta{Name: classBadParam}, VolumeBindingMode: &immediate, ReclaimPolicy: &del,
			Parameters: map[string]string{badParamKey: "x"}},
	}
	for _, sc := range classes {
		sc.Provisioner = hostpath.DriverName
		if _, err := client.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("class %s: %w", sc.Name, err)
		}
	}
	return nil
}

// nodeDriver is one node's hostpath driver, served in this process, and a
// CSI client of its controller service for counting what it holds.
type nodeDriver struct {
	node     string
	endpoint string
	csi      csi.ControllerClient
}

func serveDriver(drivers *support.Drivers, node string) (*nodeDriver, error) {
	endpoint := drivers.Endpoint(node)
	if _, err := drivers.Serve(hostpath.Config{
		Endpoint: endpoint, NodeID: node, Capacity: nodeCapacity, DataDir: filepath.Join(drivers.Dir, node),
		AttachRequired: true,
		Interceptor:    driverCalls.intercept,
	}); err != nil {
		return nil, fmt.Errorf("driver of %s: %w", node, err)
	}
	conn, err := support.Dial(endpoint)
	if err != nil {
		return nil, err
	}
	return &nodeDriver{node: node, endpoint: endpoint, csi: csi.NewControllerClient(conn)}, nil
}

// endpoints are the CSI endpoints the provisioner is given: every node's.
func endpoints() []string {
	out := make([]string, 0, len(bed.drivers))
	for _, d := range bed.drivers {
		out = append(out, d.endpoint)
	}
	return out
}
