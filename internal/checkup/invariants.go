package checkup

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/volplane/volplane/internal/inspect"
	"github.com/volplane/volplane/internal/invariants"
)

// ReadInvariants takes what invariants.Check looks at: every claim, PV
// and VolumeAttachment of the cluster, its VolumeSnapshots and contents
// (through inspect.SnapshotClient(client); not read when client is a fake) and,
// through ListVolumes, every endpoint's volumes and snapshots.
func ReadInvariants(ctx context.Context, client kubernetes.Interface, endpoints []string) (invariants.State, error) {
	return ReadInvariantsWith(ctx, client, inspect.SnapshotClient(client), endpoints)
}

func readInvariantObjects(ctx context.Context, client kubernetes.Interface) (invariants.State, error) {
	var s invariants.State
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
	return s, nil
}

// invariantBackend is a listing as the invariants compare it. An endpoint
// that serves a node and reports one topology segment is a node-local
// driver's: its volumes are those of the PVs whose affinity names that
// segment's value. A driver that publishes volumes (PUBLISH_UNPUBLISH)
// attaches them, and its listing says where.
func invariantBackend(l Listing) invariants.Backend {
	info := l.Info
	b := invariants.Backend{Driver: info.Driver, Attaches: info.Publish,
		Published: map[string][]string{}, Capacity: map[string]int64{}}
	if info.Node && info.Accessibility && len(info.Topology) == 1 {
		for key, value := range info.Topology {
			b.TopologyKey, b.Node = key, value
		}
	}
	for _, e := range l.Entries {
		id := e.GetVolume().GetVolumeId()
		b.VolumeIDs = append(b.VolumeIDs, id)
		b.Capacity[id] = e.GetVolume().GetCapacityBytes()
		if nodes := e.GetStatus().GetPublishedNodeIds(); len(nodes) > 0 {
			b.Published[id] = nodes
		}
	}
	b.ListsSnapshots = l.ListsSnapshots
	for _, snap := range l.Snapshots {
		b.Snapshots = append(b.Snapshots, invariants.BackendSnapshot{ID: snap.GetSnapshotId(),
			Source: snap.GetSourceVolumeId(), Size: snap.GetSizeBytes()})
	}
	return b
}
