package invariants

import (
	"context"
	"fmt"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Endpoint is a driver instance to read a Backend from: its controller
// service's CSI socket (unix:///path), which must serve ListVolumes.
type Endpoint struct {
	Driver, Node, TopologyKey string
	CSI                       string
	// Attaches says the driver attaches volumes (see Backend.Attaches).
	Attaches bool
}

// Read takes the cluster's claims and PVs and, through CSI ListVolumes,
// every endpoint's volumes.
func Read(ctx context.Context, client kubernetes.Interface, endpoints []Endpoint) (State, error) {
	var s State
	claims, err := client.CoreV1().PersistentVolumeClaims("").List(ctx, metav1.ListOptions{})
	if err != nil {
		return s, fmt.Errorf("list claims: %w", err)
	}
	pvs, err := client.CoreV1().PersistentVolumes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return s, fmt.Errorf("list PVs: %w", err)
	}
	vas, err := client.StorageV1().VolumeAttachments().List(ctx, metav1.ListOptions{})
	if err != nil {
		return s, fmt.Errorf("list VolumeAttachments: %w", err)
	}
	s.Claims, s.PVs, s.Attachments = claims.Items, pvs.Items, vas.Items
	for _, e := range endpoints {
		b := Backend{Driver: e.Driver, Node: e.Node, TopologyKey: e.TopologyKey, Attaches: e.Attaches}
		if b.VolumeIDs, b.Published, err = listVolumes(ctx, e.CSI); err != nil {
			return s, fmt.Errorf("volumes of %s: %w", e.CSI, err)
		}
		s.Backends = append(s.Backends, b)
	}
	return s, nil
}

// listVolumes reads every page of a driver's ListVolumes: the volume IDs
// and the nodes each is published to.
func listVolumes(ctx context.Context, endpoint string) ([]string, map[string][]string, error) {
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, nil, err
	}
	defer conn.Close()
	controller := csi.NewControllerClient(conn)
	var ids []string
	published := map[string][]string{}
	token := ""
	for {
		resp, err := controller.ListVolumes(ctx, &csi.ListVolumesRequest{StartingToken: token})
		if err != nil {
			return nil, nil, err
		}
		for _, e := range resp.GetEntries() {
			id := e.GetVolume().GetVolumeId()
			ids = append(ids, id)
			if nodes := e.GetStatus().GetPublishedNodeIds(); len(nodes) > 0 {
				published[id] = nodes
			}
		}
		if token = resp.GetNextToken(); token == "" {
			return ids, published, nil
		}
	}
}
