// Command csicreate asks a CSI driver's controller service for one volume
// (mount access, single-node writer, on the node given as the topology
// segment) and prints `volume_id key=value...` (the volume context), so a
// static PersistentVolume can point the real kubelet at it.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

func main() {
	endpoint := flag.String("endpoint", "", "unix socket path of the driver")
	name := flag.String("name", "", "volume name")
	size := flag.Int64("bytes", 64<<20, "capacity in bytes")
	key := flag.String("topology-key", "", "topology key, e.g. topology.volplane.io/node")
	node := flag.String("node", "", "topology value")
	flag.Parse()
	if err := run(*endpoint, *name, *size, *key, *node); err != nil {
		fmt.Fprintln(os.Stderr, "csicreate:", err)
		os.Exit(1)
	}
}

func run(endpoint, name string, size int64, key, node string) error {
	conn, err := grpc.NewClient("unix://"+endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req := &csi.CreateVolumeRequest{
		Name:          name,
		CapacityRange: &csi.CapacityRange{RequiredBytes: size},
		VolumeCapabilities: []*csi.VolumeCapability{{
			AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
			AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
		}},
	}
	if key != "" {
		top := []*csi.Topology{{Segments: map[string]string{key: node}}}
		req.AccessibilityRequirements = &csi.TopologyRequirement{Requisite: top, Preferred: top}
	}
	resp, err := csi.NewControllerClient(conn).CreateVolume(ctx, req)
	if err != nil {
		return err
	}
	fmt.Print(resp.GetVolume().GetVolumeId())
	for k, v := range resp.GetVolume().GetVolumeContext() {
		fmt.Printf(" %s=%s", k, v)
	}
	fmt.Println()
	return nil
}
