package support

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/volplane/volplane/internal/csi"
	"github.com/volplane/volplane/internal/endpoint"
	"github.com/volplane/volplane/internal/hostpath"
)

// Drivers are bundled hostpath drivers a suite serves in its own process,
// each configured by the suite (its interceptor, capacity, attach mode),
// in one temporary directory under /tmp: not the test's, since a unix
// socket path must stay short.
type Drivers struct {
	// Dir holds the sockets (Endpoint) and whatever data directories the
	// suite puts there.
	Dir     string
	ctx     context.Context
	cancel  context.CancelFunc
	running []*served
}

// served is one driver running.
type served struct {
	endpoint string
	ended    chan error
}

// serveWait bounds how long a driver may take to answer on its socket.
const serveWait = 20 * time.Second

// NewDrivers makes the directory, named from prefix.
func NewDrivers(prefix string) (*Drivers, error) {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Drivers{Dir: dir, ctx: ctx, cancel: cancel}, nil
}

// Endpoint is the address of the socket name in Dir.
func (d *Drivers) Endpoint(name string) string {
	return endpoint.Format(filepath.Join(d.Dir, name+".sock"))
}

// Serve runs the driver of cfg until Stop and returns once it answers on
// its socket (cfg.Endpoint): its identity, controller and node services
// probed as every loop probes them.
func (d *Drivers) Serve(cfg hostpath.Config) (*hostpath.Driver, error) {
	drv, err := hostpath.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("driver at %s: %w", cfg.Endpoint, err)
	}
	s := &served{endpoint: cfg.Endpoint, ended: make(chan error, 1)}
	d.running = append(d.running, s)
	go func() { s.ended <- drv.Run(d.ctx) }()
	deadline := time.Now().Add(serveWait)
	for {
		ep, err := csi.Dial(d.ctx, cfg.Endpoint, nil)
		if err == nil {
			_ = ep.Close()
			return drv, nil
		}
		select {
		case runErr := <-s.ended:
			s.ended <- runErr // Stop reads it too
			return nil, fmt.Errorf("driver at %s stopped: %w", cfg.Endpoint, runErr)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("driver at %s not serving: %w", cfg.Endpoint, err)
		}
	}
}

// Stop stops every driver, waits for each (saying on stderr which failed
// or did not stop) and removes Dir.
func (d *Drivers) Stop() {
	d.cancel()
	for _, s := range d.running {
		select {
		case err := <-s.ended:
			if err != nil && !errors.Is(err, context.Canceled) {
				fmt.Fprintf(os.Stderr, "driver at %s: %v\n", s.endpoint, err)
			}
		case <-time.After(10 * time.Second):
			fmt.Fprintf(os.Stderr, "driver at %s did not stop\n", s.endpoint)
		}
	}
	_ = os.RemoveAll(d.Dir)
}

// Dial is a plain gRPC connection to a driver's socket, for the CSI calls
// a test makes itself, as an administrator would (ListVolumes,
// DeleteVolume), beside the loops' own clients.
func Dial(endpoint string) (*grpc.ClientConn, error) {
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("dial %s: %w", endpoint, err)
	}
	return conn, nil
}
