package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/hostpath"
)

// The StorageClasses `up` registers for the bundled driver.
const (
	// ImmediateClass is the default class: a claim is provisioned as soon as
	// it is created, on a node the provisioner picks.
	ImmediateClass = "volplane-hostpath"
	// WaitClass provisions on the node the scheduler picks for the first pod
	// that uses the claim.
	WaitClass = "volplane-hostpath-wffc"
	// NetworkClass provisions on the network driver: volumes any node
	// reaches, attached to the node of the pod that uses them.
	NetworkClass = "volplane-network"
)

// bundledDrivers is one hostpath driver per simulated node, served from this
// process the way a DaemonSet would serve them in a real cluster, and the
// bundled driver once more as network storage for every node.
type bundledDrivers struct {
	// endpoints are what the controllers dial: each node's hostpath socket
	// and the network driver's controller socket.
	endpoints []string
	// nodeEndpoints maps each node to the sockets serving its node services
	// (its hostpath socket, its network node socket), for the node agent.
	nodeEndpoints map[string][]string
	// failed carries the error of a driver that stopped on its own.
	failed chan error
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// startDrivers runs a hostpath driver for each node, its socket at
// DIR/csi/NODE.sock and its volumes under DIR/hostpath/NODE, and the network
// driver, its controller socket at DIR/csi/network.sock, each node's node
// service at DIR/csi/network/NODE.sock and its volumes under DIR/network;
// each may give out capacity bytes. It returns once every socket is there.
// The drivers run until stop (or ctx ends).
func startDrivers(ctx context.Context, dir string, nodes []string, capacity int64) (*bundledDrivers, error) {
	socketDir, networkDir := filepath.Join(dir, "csi"), filepath.Join(dir, "csi", "network")
	for _, d := range []string{socketDir, networkDir} {
		if err := privateSocketDir(d); err != nil {
			return nil, err
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	b := &bundledDrivers{failed: make(chan error, len(nodes)+1), cancel: cancel, nodeEndpoints: map[string][]string{}}
	var sockets []string
	network := hostpath.Config{
		Endpoint: "unix://" + filepath.Join(socketDir, "network.sock"), Network: true, Capacity: capacity,
		DataDir: filepath.Join(dir, "network"), NodeEndpoints: map[string]string{},
	}
	for _, node := range nodes {
		local := filepath.Join(socketDir, node+".sock")
		shared := filepath.Join(networkDir, node+".sock")
		err := b.start(ctx, "driver for "+node, hostpath.Config{
			Endpoint: "unix://" + local, NodeID: node, Capacity: capacity,
			DataDir: filepath.Join(dir, "hostpath", node),
		})
		if err != nil {
			b.stop()
			return nil, err
		}
		network.NodeEndpoints[node] = "unix://" + shared
		b.endpoints = append(b.endpoints, "unix://"+local)
		b.nodeEndpoints[node] = []string{"unix://" + local, "unix://" + shared}
		sockets = append(sockets, local, shared)
	}
	if err := b.start(ctx, "network driver", network); err != nil {
		b.stop()
		return nil, err
	}
	b.endpoints = append(b.endpoints, network.Endpoint)
	sockets = append(sockets, filepath.Join(socketDir, "network.sock"))
	if err := b.waitServing(sockets, 30*time.Second); err != nil {
		b.stop()
		return nil, err
	}
	return b, nil
}

// start checks cfg and runs its driver until ctx ends; what names it in errors.
func (b *bundledDrivers) start(ctx context.Context, what string, cfg hostpath.Config) error {
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

// privateSocketDir makes the directory of the drivers' sockets owner-only,
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
func (b *bundledDrivers) waitServing(sockets []string, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for _, socket := range sockets {
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

// stop stops every driver gracefully and waits for them.
func (b *bundledDrivers) stop() {
	b.cancel()
	b.wg.Wait()
}

// bundleObjects are the API objects that describe the bundled drivers:
// their CSIDrivers (the node-local one needs no attach, like local storage;
// the network one does) and the three classes. A user may edit or delete
// them; `up` creates what is missing and never overwrites what is there.
func bundleObjects() ([]*storagev1.CSIDriver, []*storagev1.StorageClass) {
	driver := func(name string, attach bool) *storagev1.CSIDriver {
		return &storagev1.CSIDriver{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: storagev1.CSIDriverSpec{
				AttachRequired:       ptr.To(attach),
				PodInfoOnMount:       ptr.To(false),
				StorageCapacity:      ptr.To(false),
				VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent},
			},
		}
	}
	class := func(name, provisioner string, mode storagev1.VolumeBindingMode, isDefault bool) *storagev1.StorageClass {
		sc := &storagev1.StorageClass{
			ObjectMeta:           metav1.ObjectMeta{Name: name, Annotations: map[string]string{}},
			Provisioner:          provisioner,
			ReclaimPolicy:        ptr.To(corev1.PersistentVolumeReclaimDelete),
			VolumeBindingMode:    ptr.To(mode),
			AllowVolumeExpansion: ptr.To(true),
		}
		if isDefault {
			sc.Annotations["storageclass.kubernetes.io/is-default-class"] = "true"
		}
		return sc
	}
	return []*storagev1.CSIDriver{driver(hostpath.DriverName, false), driver(hostpath.NetworkDriverName, true)},
		[]*storagev1.StorageClass{
			class(ImmediateClass, hostpath.DriverName, storagev1.VolumeBindingImmediate, true),
			class(WaitClass, hostpath.DriverName, storagev1.VolumeBindingWaitForFirstConsumer, false),
			class(NetworkClass, hostpath.NetworkDriverName, storagev1.VolumeBindingImmediate, false),
		}
}

// registerBundle creates the bundled driver's objects that do not exist yet.
func registerBundle(ctx context.Context, rc *rest.Config) error {
	client, err := kubernetes.NewForConfig(rc)
	if err != nil {
		return err
	}
	drivers, classes := bundleObjects()
	for _, driver := range drivers {
		if _, err := client.StorageV1().CSIDrivers().Create(ctx, driver, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("register CSIDriver %s: %w", driver.Name, err)
		}
	}
	for _, sc := range classes {
		if _, err := client.StorageV1().StorageClasses().Create(ctx, sc, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("register StorageClass %s: %w", sc.Name, err)
		}
	}
	return nil
}
