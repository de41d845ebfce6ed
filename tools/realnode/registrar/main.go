// Command registrar stands in for the upstream node-driver-registrar in the
// real-node test, because the Go module proxy serves no version of
// github.com/kubernetes-csi/node-driver-registrar (its v2.x tags sit on a
// go.mod without /v2): build.sh builds this one when no REGISTRAR_SRC
// checkout is given. Volplane's own code, written against the kubelet's
// plugin registration API (k8s.io/kubelet/pkg/apis/pluginregistration/v1).
//
// It asks the CSI driver at --csi-address for its name (GetPluginInfo),
// then serves the registration service on
// <--plugin-registration-path>/<driver>-reg.sock, where the kubelet's plugin
// watcher finds it: GetInfo answers a CSIPlugin of that name whose endpoint
// is --kubelet-registration-path (the driver's socket as the kubelet sees
// it on the host) and CSI spec 1.0.0; NotifyRegistrationStatus logs the
// kubelet's answer and exits 1 when the kubelet refused the driver, so the
// container restarts and registers again. SIGTERM removes the socket.
//
// The flags are upstream's names; the ones deploy/node.yaml does not pass
// are accepted and mostly ignored (see tools/realnode/README.md).
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	registration "k8s.io/kubelet/pkg/apis/pluginregistration/v1"
)

// version is what --version prints (build.sh sets it).
var version = "volplane-registrar"

// cspVersions are the CSI versions the kubelet is told the driver speaks.
var cspVersions = []string{"1.0.0"}

type options struct {
	csiAddress, registrationDir, kubeletPath, httpEndpoint, mode string
	timeout                                                      time.Duration
	healthPort                                                   int
}

func main() {
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)
	var o options
	fl := flag.CommandLine
	fl.StringVar(&o.csiAddress, "csi-address", "/run/csi/socket", "the CSI driver's socket, as this container sees it")
	fl.StringVar(&o.registrationDir, "plugin-registration-path", "/registration", "the kubelet's plugins_registry dir, as this container sees it")
	fl.StringVar(&o.kubeletPath, "kubelet-registration-path", "", "the CSI driver's socket as the kubelet sees it on the host (required)")
	fl.DurationVar(&o.timeout, "timeout", time.Second, "timeout of each call to the driver")
	fl.StringVar(&o.httpEndpoint, "http-endpoint", "", "address of a /healthz server (empty: none)")
	fl.IntVar(&o.healthPort, "health-port", 0, "deprecated: port of the /healthz server")
	fl.StringVar(&o.mode, "mode", "", "deprecated: kubelet-registration-probe exits 0 at once")
	fl.Duration("connection-timeout", 0, "deprecated, ignored")
	fl.Bool("enable-pprof", false, "ignored")
	fl.Int("v", 0, "log verbosity (ignored)")
	showVersion := fl.Bool("version", false, "print the version and exit")
	flag.Parse()
	if *showVersion {
		fmt.Println(os.Args[0], version)
		return
	}
	if err := run(o); err != nil {
		log.Fatal(err)
	}
}

func run(o options) error {
	if o.kubeletPath == "" {
		return errors.New("--kubelet-registration-path is required")
	}
	if o.mode == "kubelet-registration-probe" {
		return nil
	}
	if o.healthPort > 0 && o.httpEndpoint != "" {
		return errors.New("only one of --health-port and --http-endpoint can be set")
	}
	if o.healthPort > 0 {
		o.httpEndpoint = fmt.Sprintf(":%d", o.healthPort)
	}
	log.Printf("registrar %s: driver at %s, registration dir %s", version, o.csiAddress, o.registrationDir)
	name, err := driverName(o)
	if err != nil {
		return err
	}
	socket := filepath.Join(o.registrationDir, name+"-reg.sock")
	if err := os.Remove(socket); err != nil && !os.IsNotExist(err) {
		return fmt.Errorf("remove stale %s: %w", socket, err)
	}
	old := syscall.Umask(0o077)
	lis, err := net.Listen("unix", socket)
	syscall.Umask(old)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", socket, err)
	}
	srv := grpc.NewServer()
	registration.RegisterRegistrationServer(srv, &server{name: name, endpoint: o.kubeletPath})
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		s := <-sigs
		log.Printf("%s: removing %s", s, socket)
		srv.Stop()
		_ = os.Remove(socket)
		os.Exit(0)
	}()
	if o.httpEndpoint != "" {
		go serveHealth(o, socket, name)
	}
	log.Printf("serving the registration of %s (endpoint %s) on %s", name, o.kubeletPath, socket)
	return srv.Serve(lis)
}

// driverName dials the driver until it answers GetPluginInfo (the driver
// container may start after this one).
func driverName(o options) (string, error) {
	target := o.csiAddress
	if !strings.HasPrefix(target, "unix:") {
		target = "unix://" + target
	}
	conn, err := grpc.NewClient(target, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return "", err
	}
	defer conn.Close()
	ident := csi.NewIdentityClient(conn)
	for began := time.Now(); ; time.Sleep(time.Second) {
		ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
		info, err := ident.GetPluginInfo(ctx, &csi.GetPluginInfoRequest{})
		cancel()
		if err == nil {
			if info.GetName() == "" {
				return "", errors.New("the driver's GetPluginInfo gave no name")
			}
			log.Printf("driver %s %s", info.GetName(), info.GetVendorVersion())
			return info.GetName(), nil
		}
		log.Printf("driver at %s not answering GetPluginInfo yet (%s): %v", o.csiAddress, time.Since(began).Round(time.Second), err)
	}
}

type server struct {
	registration.UnimplementedRegistrationServer
	name, endpoint string
}

func (s *server) GetInfo(context.Context, *registration.InfoRequest) (*registration.PluginInfo, error) {
	log.Printf("kubelet: GetInfo")
	return &registration.PluginInfo{Type: registration.CSIPlugin, Name: s.name, Endpoint: s.endpoint,
		SupportedVersions: cspVersions}, nil
}

func (s *server) NotifyRegistrationStatus(_ context.Context, st *registration.RegistrationStatus) (*registration.RegistrationStatusResponse, error) {
	if !st.PluginRegistered {
		// Exit so that the container restarts and the kubelet tries a new
		// registration socket: what upstream's registrar does too.
		log.Printf("kubelet: registration of %s failed: %s", s.name, st.Error)
		os.Exit(1)
	}
	log.Printf("kubelet: %s registered", s.name)
	return &registration.RegistrationStatusResponse{}, nil
}

// serveHealth answers /healthz with 200 while the registration socket
// exists and answers GetInfo with the driver's name.
func serveHealth(o options, socket, name string) {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		if err := probe(socket, name, o.timeout); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		_, _ = w.Write([]byte("ok"))
	})
	log.Fatal(http.ListenAndServe(o.httpEndpoint, mux))
}

func probe(socket, name string, timeout time.Duration) error {
	if _, err := os.Stat(socket); err != nil {
		return err
	}
	conn, err := grpc.NewClient("unix://"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	info, err := registration.NewRegistrationClient(conn).GetInfo(ctx, &registration.InfoRequest{})
	if err != nil {
		return err
	}
	if info.Name != name {
		return fmt.Errorf("registration socket names %q, want %q", info.Name, name)
	}
	return nil
}
