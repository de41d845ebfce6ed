// Command k8s-mock-csi serves the mock CSI driver of the Kubernetes e2e
// framework (k8s.io/kubernetes/test/e2e/storage/drivers/csi-test/mock/service,
// v1.37.2) on a unix socket, so that a conformance run can use it as a
// third-party driver. Upstream only links the mock into its e2e binary; this
// is the smallest main around it.
//
// One process is the whole driver: Identity, Controller and Node on one
// socket. The mock keeps its volumes in memory and uses the driver name as
// its node ID, so a process stands for exactly one node.
//
//	k8s-mock-csi -endpoint unix:///tmp/mock/csi.sock [-name io.kubernetes.storage.mock] ...
package main

import (
	"context"
	"errors"
	"flag"
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

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	"k8s.io/kubernetes/test/e2e/storage/drivers/csi-test/mock/service"
)

func main() {
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)
	log.SetOutput(os.Stderr)
	log.SetPrefix("k8s-mock-csi: ")

	endpoint := flag.String("endpoint", "", "where to serve, unix:///path/to/csi.sock (required)")
	name := flag.String("name", service.Name, "driver name, returned by GetPluginInfo; also the node ID")
	disableAttach := flag.Bool("disable-attach", false, "no PUBLISH_UNPUBLISH_VOLUME controller capability (no ControllerPublish)")
	attachLimit := flag.Int64("attach-limit", 0, "max_volumes_per_node in NodeGetInfo (0: no limit)")
	nodeExpansion := flag.Bool("node-expansion-required", false, "offer the EXPAND_VOLUME node capability")
	noControllerExpansion := flag.Bool("disable-controller-expansion", false, "no EXPAND_VOLUME controller capability")
	noOnlineExpansion := flag.Bool("disable-online-expansion", false, "offline volume expansion only")
	topology := flag.Bool("enable-topology", false, "report the VOLUME_ACCESSIBILITY_CONSTRAINTS capability and a fixed topology segment")
	permissive := flag.Bool("permissive-target-path", false, "accept a NodePublish target path that already exists")
	flag.Parse()
	if flag.NArg() > 0 {
		log.Fatalf("unexpected arguments: %q", flag.Args())
	}

	sock, err := socketPath(*endpoint)
	if err != nil {
		log.Fatal(err)
	}
	if err := removeStaleSocket(sock); err != nil {
		log.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(sock), 0o755); err != nil {
		log.Fatal(err)
	}

	svc := service.New(service.Config{
		DriverName:                 *name,
		DisableAttach:              *disableAttach,
		AttachLimit:                *attachLimit,
		NodeExpansionRequired:      *nodeExpansion,
		DisableControllerExpansion: *noControllerExpansion,
		DisableOnlineExpansion:     *noOnlineExpansion,
		EnableTopology:             *topology,
		PermissiveTargetPath:       *permissive,
	})

	srv := grpc.NewServer(grpc.UnaryInterceptor(logCall))
	csi.RegisterIdentityServer(srv, svc)
	csi.RegisterControllerServer(srv, svc)
	csi.RegisterNodeServer(srv, svc)
	services := "Identity, Controller, Node"
	// The v1.37.2 mock does not implement it; registered should a later one.
	if gc, ok := any(svc).(csi.GroupControllerServer); ok {
		csi.RegisterGroupControllerServer(srv, gc)
		services += ", GroupController"
	}

	lis, err := net.Listen("unix", sock)
	if err != nil {
		log.Fatal(err)
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	log.Printf("driver %s serving %s on %s", *name, services, sock)

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
	os.Exit(exit)
}

// socketPath returns the file of a unix:// endpoint.
func socketPath(endpoint string) (string, error) {
	if endpoint == "" {
		return "", errors.New("-endpoint is required (unix:///path/to/csi.sock)")
	}
	p, ok := strings.CutPrefix(endpoint, "unix://")
	if !ok || p == "" {
		return "", fmt.Errorf("-endpoint %q: want unix:///path/to/csi.sock", endpoint)
	}
	return p, nil
}

// removeStaleSocket removes a socket file left by an earlier run. Anything
// else at that path is left alone and reported.
func removeStaleSocket(p string) error {
	fi, err := os.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.Mode()&fs.ModeSocket == 0 {
		return fmt.Errorf("%s exists and is not a socket", p)
	}
	return os.Remove(p)
}

// logCall writes one line per call: the method, the gRPC code and the time.
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
