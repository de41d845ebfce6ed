package bundle

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	groupv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumegroupsnapshot/v1"
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	snapclient "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	"google.golang.org/grpc"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/endpoint"
	"github.com/volplane/volplane/internal/hostpath"
)

// The StorageClasses registered for the bundled drivers.
const (
	// ImmediateClass is the default class: a node-local claim is
	// provisioned as soon as it is created, on a node the provisioner picks.
	ImmediateClass = "volplane-hostpath"
	// WaitClass provisions node-local volumes on the node the scheduler
	// picks for the first pod that uses the claim.
	WaitClass = "volplane-hostpath-wffc"
	// NetworkClass provisions network volumes: reachable from every node,
	// attached to the node of the pod that uses them.
	NetworkClass = "volplane-network"
)

// The VolumeAttributesClasses registered for the node-local driver: the
// mutable parameters it honours (hostpath.ParamTier, hostpath.ParamIOPS),
// set on a claim at creation or changed later.
const (
	// StandardAttributes is the standard tier, with the driver's default IOPS.
	StandardAttributes = "volplane-standard"
	// FastAttributes is the premium tier with 3000 IOPS.
	FastAttributes = "volplane-fast"
)

// Config says where the drivers keep their data and what they serve.
type Config struct {
	// DataDir holds the sockets (DataDir/csi), the node-local volumes
	// (DataDir/hostpath/<node>) and the network volumes (DataDir/network).
	DataDir string
	// Nodes are the simulated nodes, each served by a node-local driver and
	// by the network driver's node service.
	Nodes []string
	// Capacity is what each driver may give out, in bytes: each node-local
	// driver, and the network driver in all.
	Capacity int64
	// NetworkMaxVolumesPerNode is how many network volumes may be attached
	// to one node at once (0: no limit): the network driver refuses more
	// with ResourceExhausted and reports it in NodeGetInfo.
	NetworkMaxVolumesPerNode int64
	// Mounter mounts for the node services; nil means the kernel's (root).
	Mounter hostpath.Mounter
	// Faults are injected into every driver's controller service (see
	// hostpath.Faults): for soak tests; the zero value injects none.
	Faults hostpath.Faults
	// Interceptor, if set, gives each node's node-local driver an
	// interceptor around its calls (hostpath.Config.Interceptor): for tests
	// that count what each node was asked.
	Interceptor func(node string) grpc.UnaryServerInterceptor
}

// Drivers are the bundled CSI drivers of a set of simulated nodes, served
// from this process the way a DaemonSet (node-local) and a storage system's
// controller with its node plugins (network) would be in a real cluster.
type Drivers struct {
	// Endpoints are what the provisioner and the attacher dial: every
	// node-local driver and the network driver's controller.
	Endpoints []string
	// NodeEndpoints are, per node, the sockets of the node services
	// serving it: what the node agent calls.
	NodeEndpoints map[string][]string

	failed chan error
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// Start runs the drivers and returns once every socket is there. They run
// until Stop (or ctx ends).
func Start(ctx context.Context, cfg Config) (*Drivers, error) {
	socketDir := filepath.Join(cfg.DataDir, "csi")
	if err := privateSocketDir(socketDir); err != nil {
		return nil, err
	}
	if err := privateSocketDir(filepath.Join(socketDir, "network")); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	b := &Drivers{failed: make(chan error, len(cfg.Nodes)+1), cancel: cancel, NodeEndpoints: map[string][]string{}}
	var sockets []string
	network := hostpath.Config{
		Endpoint: endpoint.Format(filepath.Join(socketDir, "network.sock")),
		Name:     hostpath.NetworkDriverName, Network: true, NodeEndpoints: map[string]string{},
		DataDir: filepath.Join(cfg.DataDir, "network"), Capacity: cfg.Capacity, Mounter: cfg.Mounter,
		Faults: cfg.Faults, MaxVolumesPerNode: cfg.NetworkMaxVolumesPerNode,
	}
	for _, node := range cfg.Nodes {
		local := hostpath.Config{
			Endpoint: endpoint.Format(filepath.Join(socketDir, node+".sock")), NodeID: node,
			DataDir: filepath.Join(cfg.DataDir, "hostpath", node), Capacity: cfg.Capacity, Mounter: cfg.Mounter,
			Faults: cfg.Faults,
		}
		if cfg.Interceptor != nil {
			local.Interceptor = cfg.Interceptor(node)
		}
		if err := b.run(ctx, local, "driver for "+node); err != nil {
			b.Stop()
			return nil, err
		}
		network.NodeEndpoints[node] = endpoint.Format(filepath.Join(socketDir, "network", node+".sock"))
		b.Endpoints = append(b.Endpoints, local.Endpoint)
		b.NodeEndpoints[node] = []string{local.Endpoint, network.NodeEndpoints[node]}
		sockets = append(sockets, local.Endpoint, network.NodeEndpoints[node])
	}
	if err := b.run(ctx, network, "network driver"); err != nil {
		b.Stop()
		return nil, err
	}
	b.Endpoints = append(b.Endpoints, network.Endpoint)
	sockets = append(sockets, network.Endpoint)
	if err := b.waitServing(sockets, 30*time.Second); err != nil {
		b.Stop()
		return nil, err
	}
	return b, nil
}

// run starts one driver; its failure is reported on Failed.
func (b *Drivers) run(ctx context.Context, cfg hostpath.Config, what string) error {
	d, err := hostpath.New(cfg)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	b.wg.Go(func() {
		if err := d.Run(ctx); err != nil {
			b.failed <- fmt.Errorf("%s: %w", what, err)
		}
	})
	return nil
}

// Failed carries the error of a driver that stopped on its own.
func (b *Drivers) Failed() <-chan error { return b.failed }

// privateSocketDir makes a directory of the drivers' sockets owner-only,
// whatever the umask. It is up's own, so an existing one (an older up made
// it 0750) is made owner-only too: whoever can reach a socket can delete
// volumes.
func privateSocketDir(dir string) error {
	if err := hostpath.MkdirPrivate(dir); err != nil {
		return fmt.Errorf("socket dir: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("socket dir: %w", err)
	}
	return nil
}

// waitServing returns once every socket exists, or the error of a driver that
// failed to start.
func (b *Drivers) waitServing(endpoints []string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for _, address := range endpoints {
		socket, err := endpoint.Parse(address)
		if err != nil {
			return err
		}
		for {
			if _, err := os.Stat(socket); err == nil {
				break
			}
			select {
			case err := <-b.failed:
				return err
			case <-time.After(20 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("driver socket %s did not appear within %s", socket, limit)
			}
		}
	}
	return nil
}

// Stop stops every driver gracefully and waits for them.
func (b *Drivers) Stop() {
	b.cancel()
	b.wg.Wait()
}

// Objects are the API objects that describe the bundled drivers: their
// CSIDrivers and the classes. A user may edit or delete them; Register
// creates what is missing and never overwrites what is there.
func Objects() ([]*storagev1.CSIDriver, []*storagev1.StorageClass) {
	// The node-local driver also takes inline ephemeral volumes (a CSI
	// volume in a pod's spec), as csi-driver-host-path does: the node calls
	// then carry the pod's identity (podInfoOnMount), whose
	// csi.storage.k8s.io/ephemeral key tells the driver the publish is of
	// one. The network driver serves persistent volumes only.
	driver := func(name string, attach, storageCapacity bool) *storagev1.CSIDriver {
		modes := []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent}
		if !attach {
			modes = append(modes, storagev1.VolumeLifecycleEphemeral)
		}
		d := &storagev1.CSIDriver{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: storagev1.CSIDriverSpec{
				AttachRequired:       ptr.To(attach),
				PodInfoOnMount:       ptr.To(!attach),
				StorageCapacity:      ptr.To(storageCapacity),
				VolumeLifecycleModes: modes,
			},
		}
		if attach {
			// The nodes refresh an attachable driver's CSINode allocatable
			// count every minute and at once after an attach fails with
			// ResourceExhausted, as the kubelet does when this is set.
			d.Spec.NodeAllocatableUpdatePeriodSeconds = ptr.To[int64](60)
		}
		return d
	}
	class := func(name, driver string, mode storagev1.VolumeBindingMode, isDefault bool) *storagev1.StorageClass {
		sc := &storagev1.StorageClass{
			ObjectMeta:           metav1.ObjectMeta{Name: name, Annotations: map[string]string{}},
			Provisioner:          driver,
			ReclaimPolicy:        ptr.To(corev1.PersistentVolumeReclaimDelete),
			VolumeBindingMode:    ptr.To(mode),
			AllowVolumeExpansion: ptr.To(true),
		}
		if isDefault {
			sc.Annotations["storageclass.kubernetes.io/is-default-class"] = "true"
		}
		return sc
	}
	// Node-local volumes need no attaching, like local storage; network
	// volumes are attached to the node that uses them. The capacity loop
	// publishes the node-local driver's capacity per node, which the
	// scheduler reads for its WaitForFirstConsumer claims
	// (storageCapacity); a network volume fits any node.
	return []*storagev1.CSIDriver{driver(hostpath.DriverName, false, true), driver(hostpath.NetworkDriverName, true, false)},
		[]*storagev1.StorageClass{
			class(ImmediateClass, hostpath.DriverName, storagev1.VolumeBindingImmediate, true),
			class(WaitClass, hostpath.DriverName, storagev1.VolumeBindingWaitForFirstConsumer, false),
			class(NetworkClass, hostpath.NetworkDriverName, storagev1.VolumeBindingImmediate, false),
		}
}

// AttributeClasses are the VolumeAttributesClasses of the node-local
// driver; like Objects, Register creates them only where missing.
func AttributeClasses() []*storagev1.VolumeAttributesClass {
	vac := func(name string, params map[string]string) *storagev1.VolumeAttributesClass {
		return &storagev1.VolumeAttributesClass{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			DriverName: hostpath.DriverName,
			Parameters: params,
		}
	}
	return []*storagev1.VolumeAttributesClass{
		vac(StandardAttributes, map[string]string{hostpath.ParamTier: hostpath.TierStandard}),
		vac(FastAttributes, map[string]string{hostpath.ParamTier: hostpath.TierPremium, hostpath.ParamIOPS: "3000"}),
	}
}

// registerDriver creates the bundled CSIDriver, or replaces one that a data
// dir of an older volplane holds with another spec: most of a CSIDriver's
// spec is immutable (a node-local driver registered before it served
// inline volumes would refuse them for ever). The loops start after
// Register, so none sees the moment the driver is gone.
func registerDriver(ctx context.Context, client kubernetes.Interface, d *storagev1.CSIDriver) error {
	api := client.StorageV1().CSIDrivers()
	_, err := api.Create(ctx, d, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		return wrapRegister(d.Name, err)
	}
	old, err := api.Get(ctx, d.Name, metav1.GetOptions{})
	if err != nil || sameDriverSpec(old.Spec, d.Spec) {
		return wrapRegister(d.Name, err)
	}
	err = api.Delete(ctx, d.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &old.UID}})
	if err == nil || apierrors.IsNotFound(err) {
		_, err = api.Create(ctx, d, metav1.CreateOptions{})
	}
	return wrapRegister(d.Name, err)
}

// sameDriverSpec compares the fields the bundle sets; the API server
// defaults the others.
func sameDriverSpec(have, want storagev1.CSIDriverSpec) bool {
	return equality.Semantic.DeepEqual(have.AttachRequired, want.AttachRequired) &&
		equality.Semantic.DeepEqual(have.PodInfoOnMount, want.PodInfoOnMount) &&
		equality.Semantic.DeepEqual(have.StorageCapacity, want.StorageCapacity) &&
		equality.Semantic.DeepEqual(have.NodeAllocatableUpdatePeriodSeconds, want.NodeAllocatableUpdatePeriodSeconds) &&
		slices.Equal(have.VolumeLifecycleModes, want.VolumeLifecycleModes)
}

func wrapRegister(name string, err error) error {
	if err != nil {
		return fmt.Errorf("register CSIDriver %s: %w", name, err)
	}
	return nil
}

// Register creates the bundled drivers' objects that do not exist yet,
// and replaces a bundled CSIDriver whose spec is not the bundle's.
func Register(ctx context.Context, client kubernetes.Interface) error {
	drivers, classes := Objects()
	return RegisterObjects(ctx, client, nil, Set{CSIDrivers: drivers, Classes: classes, AttributeClasses: AttributeClasses()})
}

// Set is the API objects that describe a set of drivers: the bundled ones
// (Objects, AttributeClasses, SnapshotClasses) or a user's (userdriver).
type Set struct {
	CSIDrivers       []*storagev1.CSIDriver
	Classes          []*storagev1.StorageClass
	AttributeClasses []*storagev1.VolumeAttributesClass
	SnapshotClasses  []*snapv1.VolumeSnapshotClass
	GroupClasses     []*groupv1.VolumeGroupSnapshotClass
	// Secrets are the secrets the classes name.
	Secrets []*corev1.Secret
}

// RegisterObjects creates the objects of s that do not exist yet (a user
// may edit or delete them: nothing is overwritten) and replaces a CSIDriver
// whose spec differs (registerDriver). snaps may be nil when s has no
// snapshot class; the snapshot API must be installed (InstallSnapshotAPI)
// when it has one.
func RegisterObjects(ctx context.Context, client kubernetes.Interface, snaps snapclient.Interface, s Set) error {
	var errs []error
	created := func(kind, name string, err error) {
		if err != nil && !apierrors.IsAlreadyExists(err) {
			errs = append(errs, fmt.Errorf("register %s %s: %w", kind, name, err))
		}
	}
	for _, sec := range s.Secrets {
		_, err := client.CoreV1().Secrets(sec.Namespace).Create(ctx, sec, metav1.CreateOptions{})
		created("Secret", sec.Namespace+"/"+sec.Name, err)
	}
	for _, vac := range s.AttributeClasses {
		_, err := client.StorageV1().VolumeAttributesClasses().Create(ctx, vac, metav1.CreateOptions{})
		created("VolumeAttributesClass", vac.Name, err)
	}
	for _, d := range s.CSIDrivers {
		errs = append(errs, registerDriver(ctx, client, d))
	}
	for _, sc := range s.Classes {
		_, err := client.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{})
		created("StorageClass", sc.Name, err)
	}
	for _, c := range s.SnapshotClasses {
		_, err := snaps.SnapshotV1().VolumeSnapshotClasses().Create(ctx, c, metav1.CreateOptions{})
		created("VolumeSnapshotClass", c.Name, err)
	}
	for _, c := range s.GroupClasses {
		_, err := snaps.GroupsnapshotV1().VolumeGroupSnapshotClasses().Create(ctx, c, metav1.CreateOptions{})
		created("VolumeGroupSnapshotClass", c.Name, err)
	}
	return errors.Join(errs...)
}
