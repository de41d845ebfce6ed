// Command gce-pd-fake-csi serves the Google Compute Engine persistent disk
// CSI driver (sigs.k8s.io/gcp-compute-persistent-disk-csi-driver, v1.28.1)
// with the in-memory fakes that upstream ships next to it for its own sanity
// test: a fake Compute Engine API, a fake instance metadata server, a fake
// mounter and fake device utilities. The Identity, Controller and Node
// servers are the driver's own code; only what lies below them (the cloud,
// the disks, the mounts) is fake, so nothing leaves the process.
//
// One process is the whole driver for one node: Identity, Controller and Node
// on one unix socket. The node is a Compute Engine instance of the fake
// cloud, and its CSI node ID is projects/PROJECT/zones/ZONE/instances/NODE.
//
//	gce-pd-fake-csi -endpoint unix:///tmp/gcepd/csi.sock [-node node-1] ...
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"strings"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"github.com/volplane/volplane/tools/drivers/internal/serve"
	compute "google.golang.org/api/compute/v1"
	"k8s.io/klog/v2"

	"sigs.k8s.io/gcp-compute-persistent-disk-csi-driver/pkg/common"
	"sigs.k8s.io/gcp-compute-persistent-disk-csi-driver/pkg/deviceutils"
	gce "sigs.k8s.io/gcp-compute-persistent-disk-csi-driver/pkg/gce-cloud-provider/compute"
	metadataservice "sigs.k8s.io/gcp-compute-persistent-disk-csi-driver/pkg/gce-cloud-provider/metadata"
	driver "sigs.k8s.io/gcp-compute-persistent-disk-csi-driver/pkg/gce-pd-csi-driver"
	mountmanager "sigs.k8s.io/gcp-compute-persistent-disk-csi-driver/pkg/mount-manager"
)

// The driver's own name (cmd/gce-pd-csi-driver's default).
const defaultName = "pd.csi.storage.gke.io"

func main() {
	log.SetFlags(log.LstdFlags | log.Lmicroseconds)
	log.SetOutput(os.Stderr)
	log.SetPrefix("gce-pd-fake-csi: ")

	endpoint := flag.String("endpoint", "", "where to serve, unix:///path/to/csi.sock (required)")
	name := flag.String("name", defaultName, "driver name, returned by GetPluginInfo")
	node := flag.String("node", "node-1", "name of the one node (a Compute Engine instance of the fake cloud)")
	project := flag.String("project", "test-project", "project of the fake cloud")
	zone := flag.String("zone", "country-region-zone", "zone of the fake cloud and of the node (three dash-separated parts: the region is the first two)")
	machineType := flag.String("machine-type", "n1-standard-1", "machine type of the node; sets max_volumes_per_node in NodeGetInfo")
	verbosity := flag.Int("v", 0, "klog verbosity of the driver's own logs (stderr)")
	flag.Parse()
	if flag.NArg() > 0 {
		log.Fatalf("unexpected arguments: %q", flag.Args())
	}
	if strings.Count(*zone, "-") < 2 {
		log.Fatalf("-zone %q: want three dash-separated parts, like us-central1-c", *zone)
	}

	klogFlags := flag.NewFlagSet("klog", flag.ExitOnError)
	klog.InitFlags(klogFlags)
	_ = klogFlags.Set("v", fmt.Sprint(*verbosity))
	_ = klogFlags.Set("logtostderr", "true")

	sock, err := serve.Socket(*endpoint)
	if err != nil {
		log.Fatal(err)
	}

	// The fake metadata server answers for the node: package variables
	// upstream exposes for this.
	metadataservice.FakeProject = *project
	metadataservice.SetZone(*zone)
	metadataservice.SetName(*node)
	metadataservice.SetMachineType(*machineType)

	cloud, err := gce.CreateFakeCloudProvider(*project, *zone, nil)
	if err != nil {
		log.Fatalf("fake cloud: %v", err)
	}
	cloud.InsertInstance(&compute.Instance{Name: *node, Disks: []*compute.AttachedDisk{}}, *zone, *node)

	gceDriver := driver.GetGCEDriver()
	identity := driver.NewIdentityServer(gceDriver)
	// As upstream's sanity test (test/sanity): no data cache, no storage
	// pools, no backoff before the first retry of a failed
	// ControllerPublish (5 minutes at most after repeated failures).
	controller := driver.NewControllerServer(gceDriver, cloud, 0, 5*time.Minute,
		nil /* fallbackRequisiteZones */, false /* enableStoragePools */, false, /* enableDataCache */
		driver.MultiZoneVolumeHandleConfig{}, driver.ListVolumesConfig{},
		driver.ProvisionableDisksConfig{
			SupportsIopsChange:       []string{"hyperdisk-balanced", "hyperdisk-extreme"},
			SupportsThroughputChange: []string{"hyperdisk-balanced", "hyperdisk-throughput", "hyperdisk-ml"},
		},
		false /* enableHdHA */, &driver.GCEControllerServerArgs{})
	mounter := mountmanager.NewFakeSafeMounter()
	nodeServer := driver.NewNodeServer(gceDriver, mounter, deviceutils.NewFakeDeviceUtils(true),
		metadataservice.NewFakeService(),
		mountmanager.NewFakeStatterWithOptions(mounter, mountmanager.FakeStatterOptions{IsBlock: false}),
		&driver.NodeServerArgs{EnableDeviceInUseCheck: true, NodeName: *node})
	if err := gceDriver.SetupGCEDriver(*name, "gce-pd-fake-csi", nil, nil, identity, controller, nodeServer); err != nil {
		log.Fatalf("driver setup: %v", err)
	}

	srv := serve.NewServer()
	csi.RegisterIdentityServer(srv, identity)
	csi.RegisterControllerServer(srv, controller)
	csi.RegisterNodeServer(srv, nodeServer)

	code := serve.Run(srv, sock, fmt.Sprintf("driver %s serving Identity, Controller, Node on %s; node ID %s", *name, sock,
		common.CreateNodeID(*project, *zone, *node)))
	klog.Flush()
	os.Exit(code)
}
