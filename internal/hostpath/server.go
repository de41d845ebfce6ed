package hostpath

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/klog/v2"
)

// gracePeriod bounds how long Run waits for calls in flight (a snapshot copy
// can take a while) before cutting them off.
const gracePeriod = 30 * time.Second

// Driver is one hostpath CSI plugin: controller and node of one node.
type Driver struct {
	cfg    Config
	socket string
	disk   layout
	locks  *keyedMutex
	// store is loaded by open, before the first call is served.
	store *store
	// realDataDir is DataDir with symlinks resolved, set by open: node
	// paths are checked against it after their own symlinks are resolved.
	realDataDir string
}

// Run claims DataDir, loads the state and serves CSI on the endpoint until ctx
// is done; then it stops gracefully and removes the socket. Run returns an
// error if DataDir is in use by another driver, the state cannot be read, or
// serving fails.
func (d *Driver) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithValues("driver", d.cfg.Name, "node", d.cfg.NodeID)
	release, aside, err := d.open()
	if err != nil {
		return err
	}
	defer release()
	if aside.dir != "" {
		logger.Info("Moved volume and snapshot data the state does not record out of the way; nothing was deleted",
			"dir", aside.dir, "entries", entryList(aside.entries))
	}
	lis, err := listenUnix(d.socket)
	if err != nil {
		return err
	}
	defer removeSocket(logger, d.socket)
	srv := d.newServer(logger)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	logger.Info("serving CSI", "endpoint", d.cfg.Endpoint, "dataDir", d.cfg.DataDir)
	select {
	case err := <-served:
		return fmt.Errorf("serve %s: %w", d.socket, err)
	case <-ctx.Done():
	}
	stopGracefully(srv, gracePeriod)
	<-served
	logger.Info("stopped serving CSI")
	return nil
}

// open prepares DataDir, locks it against a second driver and loads the
// state. The returned func releases the lock; aside says what data the
// state does not record was moved where (nothing if aside.dir is "").
func (d *Driver) open() (release func(), aside movedAside, err error) {
	for _, dir := range []string{d.disk.root, d.disk.volumesDir(), d.disk.snapshotsDir()} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, aside, fmt.Errorf("data dir: %w", err)
		}
	}
	unlock, err := lockDir(d.disk.lockPath())
	if err != nil {
		return nil, aside, err
	}
	defer func() {
		if err != nil {
			unlock()
		}
	}()
	if d.realDataDir, err = filepath.EvalSymlinks(d.disk.root); err != nil {
		return nil, aside, fmt.Errorf("data dir: %w", err)
	}
	st, found, err := loadStore(d.disk.statePath())
	if err != nil {
		return nil, aside, err
	}
	onDisk, err := d.disk.dataEntries()
	if err != nil {
		return nil, aside, err
	}
	if problem := lostStateProblem(found, onDisk, d.cfg.DataDir); problem != "" {
		return nil, aside, errors.New(problem)
	}
	if v := st.current().foreignVolume(d.cfg.NodeID); v != nil {
		return nil, aside, fmt.Errorf("data dir %s holds volume %s of node %q, but this driver is node %q: volumes cannot move between nodes",
			d.cfg.DataDir, v.ID, v.NodeID, d.cfg.NodeID)
	}
	if !found {
		if err := st.saveInitial(); err != nil {
			return nil, aside, err
		}
	}
	if aside.entries = unrecorded(st.current(), onDisk); len(aside.entries) > 0 {
		if aside.dir, err = d.disk.setAside(aside.entries, time.Now()); err != nil {
			return nil, aside, err
		}
	}
	d.store = st
	return unlock, aside, nil
}

// lockDir takes an exclusive flock on path, so two drivers never share one
// state file. The kernel drops the lock if the process dies.
func lockDir(path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("data dir lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("data dir %s is in use by another driver", filepath.Dir(path))
		}
		return nil, fmt.Errorf("data dir lock: %w", err)
	}
	return func() { f.Close() }, nil
}

func stopGracefully(srv *grpc.Server, grace time.Duration) {
	done := make(chan struct{})
	go func() {
		srv.GracefulStop()
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(grace):
		srv.Stop()
		<-done
	}
}

func (d *Driver) newServer(logger klog.Logger) *grpc.Server {
	interceptors := []grpc.UnaryServerInterceptor{logCalls(logger)}
	if d.cfg.Interceptor != nil {
		interceptors = append(interceptors, d.cfg.Interceptor)
	}
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(interceptors...))
	csi.RegisterIdentityServer(srv, &identityServer{d: d})
	csi.RegisterControllerServer(srv, &controllerServer{d: d})
	csi.RegisterNodeServer(srv, &nodeServer{d: d})
	return srv
}

// logCalls logs every call at a verbosity that matches its outcome and makes
// sure every error leaving the driver is a gRPC status: an error without a
// code is a bug and reaches the CO as Internal.
func logCalls(logger klog.Logger) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		logger := logger.WithValues("method", info.FullMethod)
		resp, err := handler(klog.NewContext(ctx, logger), req)
		if err == nil {
			logger.V(5).Info("call succeeded")
			return resp, nil
		}
		st, ok := status.FromError(err)
		if !ok {
			st = status.New(codes.Internal, err.Error())
		}
		switch st.Code() {
		case codes.Internal, codes.Unknown:
			logger.Error(err, "call failed")
		default:
			logger.V(3).Info("call refused", "code", st.Code(), "reason", st.Message())
		}
		return nil, st.Err()
	}
}
