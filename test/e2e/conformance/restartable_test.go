package conformance

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/volplane/volplane/internal/cluster"
	"github.com/volplane/volplane/internal/controller/manager"
	"github.com/volplane/volplane/internal/csi"
	"github.com/volplane/volplane/internal/endpoint"
	"github.com/volplane/volplane/internal/hostpath"
)

// A network hostpath driver of its own name that the test starts, and
// stops and starts again on Restart, as `volplane up` would its user's
// driver: the lab of the kill scenarios. One process serves the
// controller and every node, so any role restarts it whole.
const (
	restartDriver = "restart.csi.volplane.io"
	restartClass  = "conformance-restart"
)

type restartable struct {
	cfg     hostpath.Config
	mounter *hostpath.FakeMounter
	dir     string

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan error
}

var restarts *restartable

// startRestartable is a Setup: it starts the driver and registers its
// CSIDriver and class, before the stack (whose loops and agent are told of
// it by restartLoops and restartAgent) starts.
func startRestartable(cp *cluster.ControlPlane) (func(), error) {
	dir, err := os.MkdirTemp("", "vp-rst-")
	if err != nil {
		return nil, err
	}
	r := &restartable{dir: dir, mounter: hostpath.NewFakeMounter()}
	r.cfg = hostpath.Config{
		Name: restartDriver, Network: true, Endpoint: endpoint.Format(filepath.Join(dir, "c.sock")),
		NodeEndpoints: map[string]string{}, DataDir: filepath.Join(dir, "data"), Capacity: 10 << 30, Mounter: r.mounter,
	}
	for i, node := range cp.Nodes {
		r.cfg.NodeEndpoints[node] = endpoint.Format(filepath.Join(dir, fmt.Sprintf("n%d.sock", i)))
	}
	stop := func() { r.stop(); os.RemoveAll(dir) }
	if err := r.start(context.Background()); err != nil {
		stop()
		return nil, err
	}
	if err := registerRestartable(context.Background(), cp); err != nil {
		stop()
		return nil, err
	}
	restarts = r
	return stop, nil
}

func registerRestartable(ctx context.Context, cp *cluster.ControlPlane) error {
	d := &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: restartDriver},
		Spec: storagev1.CSIDriverSpec{AttachRequired: ptr.To(true), VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent}}}
	if _, err := cp.Client.StorageV1().CSIDrivers().Create(ctx, d, metav1.CreateOptions{}); err != nil {
		return err
	}
	c := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: restartClass}, Provisioner: restartDriver,
		ReclaimPolicy: ptr.To(corev1.PersistentVolumeReclaimDelete), AllowVolumeExpansion: ptr.To(true),
		VolumeBindingMode: ptr.To(storagev1.VolumeBindingImmediate)}
	_, err := cp.Client.StorageV1().StorageClasses().Create(ctx, c, metav1.CreateOptions{})
	return err
}

// restartLoops and restartAgent tell the stack's loops and node agent of
// the driver.
func restartLoops(c *manager.Config) {
	c.CSIEndpoints = append(c.CSIEndpoints, restarts.cfg.Endpoint)
}

func restartAgent(c *manager.Config) {
	for i, n := range c.NodeAgent.Nodes {
		c.NodeAgent.Nodes[i].Endpoints = append(n.Endpoints, restarts.cfg.NodeEndpoints[n.Name])
	}
}

// start runs the driver and returns once its controller answers.
func (r *restartable) start(ctx context.Context) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	d, err := hostpath.New(r.cfg)
	if err != nil {
		return err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	r.cancel, r.done = cancel, make(chan error, 1)
	go func(done chan error) { done <- d.Run(runCtx) }(r.done)
	return wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, 20*time.Second, true, func(ctx context.Context) (bool, error) {
		ep, err := csi.Dial(ctx, r.cfg.Endpoint, nil)
		if err != nil {
			return false, nil
		}
		return true, ep.Close()
	})
}

func (r *restartable) stop() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cancel == nil {
		return
	}
	r.cancel()
	if err := <-r.done; err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintf(os.Stderr, "restartable driver: %v\n", err)
	}
	r.cancel = nil
}

// Restart is the lab's: the process serves every role.
func (r *restartable) Restart(ctx context.Context, role string) error {
	r.stop()
	return r.start(ctx)
}
