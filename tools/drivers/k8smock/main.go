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
	"flag"
	"fmt"
	"log"
	"os"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/volplane/volplane/tools/drivers/internal/serve"
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

	sock, err := serve.Socket(*endpoint)
	if err != nil {
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

	srv := serve.NewServer()
	csi.RegisterIdentityServer(srv, svc)
	csi.RegisterControllerServer(srv, svc)
	csi.RegisterNodeServer(srv, svc)
	services := "Identity, Controller, Node"
	// The v1.37.2 mock does not implement it; registered should a later one.
	if gc, ok := any(svc).(csi.GroupControllerServer); ok {
		csi.RegisterGroupControllerServer(srv, gc)
		services += ", GroupController"
	}

	os.Exit(serve.Run(srv, sock, fmt.Sprintf("driver %s serving %s on %s", *name, services, sock)))
}
