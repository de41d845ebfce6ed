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
	s.Claims, s.PVs = claims.Items, pvs.Items
	for _, e := range endpoints {
		ids, err := listVolumes(ctx, e.CSI)
		if err != nil {
			return s, fmt.Errorf("volumes of %s: %w", e.CSI, err)
		}
		s.Backends = append(s.Backends, Backend{Driver: e.Driver, Node: e.Node, TopologyKey: e.TopologyKey, VolumeIDs: ids})
	}
	return s, nil
}

// listVolumes reads every page of a driver's ListVolumes.
func listVolumes(ctx context.Context, endpoint string) ([]string, error) {
	conn, err := grpc.NewClient(endpoint, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	controller := csi.NewControllerClient(conn)
	var ids []string
	token := ""
	for {
		resp, err := controller.ListVolumes(ctx, &csi.ListVolumesRequest{StartingToken: token})
		if err != nil {
			return nil, err
		}
		for _, e := range resp.GetEntries() {
			ids = append(ids, e.GetVolume().GetVolumeId())
		}
		if token = resp.GetNextToken(); token == "" {
			return ids, nil
		}
	}
}
