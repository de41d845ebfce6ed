// Package serve is what the mains of tools/drivers share: a CSI driver's
// gRPC servers on a unix socket, one log line per call, a graceful stop on
// SIGTERM or SIGINT, and the socket removed on the way out.
package serve

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
)

// Socket is the file of a unix:// endpoint, ready to listen on: a socket
// left by an earlier run is removed (anything else there is an error) and
// its directory made.
func Socket(endpoint string) (string, error) {
	if endpoint == "" {
		return "", errors.New("-endpoint is required (unix:///path/to/csi.sock)")
	}
	p, ok := strings.CutPrefix(endpoint, "unix://")
	if !ok || p == "" {
		return "", fmt.Errorf("-endpoint %q: want unix:///path/to/csi.sock", endpoint)
	}
	fi, err := os.Lstat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		return "", err
	case fi.Mode()&fs.ModeSocket == 0:
		return "", fmt.Errorf("%s exists and is not a socket", p)
	default:
		if err := os.Remove(p); err != nil {
			return "", err
		}
	}
	return p, os.MkdirAll(filepath.Dir(p), 0o755)
}

// NewServer is a gRPC server that logs one line per call.
func NewServer() *grpc.Server { return grpc.NewServer(grpc.UnaryInterceptor(logCall)) }

// Run serves srv on sock until SIGTERM or SIGINT (a graceful stop, hard
// after 10 s) or a serving error, removes the socket and returns the exit
// code. banner is logged once serving.
func Run(srv *grpc.Server, sock, banner string) int {
	lis, err := net.Listen("unix", sock)
	if err != nil {
		log.Print(err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	log.Print(banner)
	exit := 0
	select {
	case <-ctx.Done():
		log.Printf("signal: stopping")
		drained := make(chan struct{})
		go func() { srv.GracefulStop(); close(drained) }()
		select {
		case <-drained:
		case <-time.After(10 * time.Second):
			log.Printf("calls still running after 10s: stopping hard")
			srv.Stop()
		}
	case err := <-served:
		log.Printf("serve: %v", err)
		exit = 1
	}
	if err := os.Remove(sock); err != nil && !errors.Is(err, fs.ErrNotExist) {
		log.Printf("remove socket: %v", err)
	}
	return exit
}

// logCall writes one line per call: the method, the gRPC code and the
// time, and the message of an error.
func logCall(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	start := time.Now()
	resp, err := handler(ctx, req)
	st := status.Convert(err)
	if err != nil {
		log.Printf("%s %s %s (%s)", info.FullMethod, st.Code(), time.Since(start).Round(time.Microsecond), st.Message())
	} else {
		log.Printf("%s %s %s", info.FullMethod, st.Code(), time.Since(start).Round(time.Microsecond))
	}
	return resp, err
}
