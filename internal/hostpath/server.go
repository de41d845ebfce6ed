package hostpath

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/klog/v2"

	"github.com/volplane/volplane/internal/keyedmutex"
)

// gracePeriod bounds how long Run waits for calls in flight (a snapshot copy
// can take a while) before cutting them off.
const gracePeriod = 30 * time.Second

// Driver is one hostpath CSI plugin: in node-local mode controller and node
// of one node on one socket; in network mode one controller for every node
// on its socket and each node's node service on that node's socket.
type Driver struct {
	cfg    Config
	socket string
	// nodeSockets maps each node served to the socket of its node service:
	// the controller's socket in node-local mode.
	nodeSockets map[string]string
	disk        layout
	locks       *keyedmutex.Mutex
	// store is loaded by open, before the first call is served.
	store *store
	// realDataDir is DataDir with symlinks resolved, set by open: node
	// paths are checked against it after their own symlinks are resolved.
	realDataDir string
	// faults injects Config.Faults into the controller service.
	faults *faultInjector
	// listed: the sorted volume IDs a listing was last started on.
	listed listedIDs
}

// Run claims DataDir, loads the state and serves CSI on every socket until
// ctx is done; then it stops gracefully and removes the sockets. Run returns
// an error if DataDir is in use by another driver, the state cannot be read,
// or serving fails.
func (d *Driver) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx).WithValues("driver", d.cfg.Name)
	if !d.cfg.Network {
		logger = logger.WithValues("node", d.cfg.NodeID)
	}
	release, aside, err := d.open()
	if err != nil {
		return err
	}
	defer release()
	if aside.dir != "" {
		logger.Info("Moved volume and snapshot data the state does not record out of the way; nothing was deleted",
			"dir", aside.dir, "entries", entryList(aside.entries))
	}
	servers, err := d.listen(logger)
	for _, s := range servers {
		defer removeSocket(logger, s.socket)
		defer s.lis.Close()
	}
	if err != nil {
		return err
	}
	served := make(chan error, len(servers))
	for _, s := range servers {
		go func() { served <- s.srv.Serve(s.lis) }()
	}
	logger.Info("serving CSI", "endpoint", d.cfg.Endpoint, "dataDir", d.cfg.DataDir, "sockets", len(servers))
	var failed error
	early := false
	select {
	case failed = <-served:
		early = true
	case <-ctx.Done():
	}
	for _, s := range servers {
		stopGracefully(s.srv, gracePeriod)
	}
	for i := range servers {
		if i > 0 || !early {
			<-served
		}
	}
	if early {
		return fmt.Errorf("serve CSI: %w", failed)
	}
	logger.Info("stopped serving CSI")
	return nil
}

// socketServer is one socket and the gRPC server that serves it.
type socketServer struct {
	socket string
	lis    net.Listener
	srv    *grpc.Server
}

// listen opens every socket: the controller's (with the node service too in
// node-local mode), then, in network mode, each node's. On error it returns
// what it opened, for Run to close.
func (d *Driver) listen(logger klog.Logger) ([]socketServer, error) {
	var out []socketServer
	add := func(socket string, logger klog.Logger, controller bool, node string) error {
		lis, err := listenUnix(socket)
		if err != nil {
			return err
		}
		out = append(out, socketServer{socket: socket, lis: lis, srv: d.newServer(logger, controller, node)})
		return nil
	}
	if !d.cfg.Network {
		return out, add(d.socket, logger, true, d.cfg.NodeID)
	}
	if err := add(d.socket, logger, true, ""); err != nil {
		return out, err
	}
	for _, node := range slices.Sorted(maps.Keys(d.nodeSockets)) {
		if err := add(d.nodeSockets[node], logger.WithValues("node", node), false, node); err != nil {
			return out, err
		}
	}
	return out, nil
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
	defer func() {
		if err != nil {
			st.close()
		}
	}()
	onDisk, err := d.disk.dataEntries()
	if err != nil {
		return nil, aside, err
	}
	if problem := lostStateProblem(found, onDisk, d.cfg.DataDir); problem != "" {
		return nil, aside, errors.New(problem)
	}
	if problem := st.orphanJournalProblem(); problem != "" {
		return nil, aside, errors.New(problem)
	}
	if problem := foreignProblem(st.current(), d.cfg); problem != "" {
		return nil, aside, errors.New(problem)
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
	return func() { st.close(); unlock() }, aside, nil
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

// newServer serves identity and, as asked, the controller and the node
// service of node ("" for none).
func (d *Driver) newServer(logger klog.Logger, controller bool, node string) *grpc.Server {
	interceptors := []grpc.UnaryServerInterceptor{logCalls(logger)}
	if d.cfg.Interceptor != nil {
		interceptors = append(interceptors, d.cfg.Interceptor)
	}
	if controller && d.cfg.Faults.Enabled() {
		interceptors = append(interceptors, d.faults.intercept)
	}
	srv := grpc.NewServer(grpc.ChainUnaryInterceptor(interceptors...))
	csi.RegisterIdentityServer(srv, &identityServer{d: d})
	if controller {
		csi.RegisterControllerServer(srv, &controllerServer{d: d})
		csi.RegisterGroupControllerServer(srv, &groupControllerServer{d: d})
	}
	if node != "" {
		csi.RegisterNodeServer(srv, &nodeServer{d: d, node: node})
	}
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
