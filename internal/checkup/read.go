package checkup

import (
	"context"
	"errors"
	"fmt"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/volplane/volplane/internal/csi"
	"github.com/volplane/volplane/internal/doctor"
	"github.com/volplane/volplane/internal/health"
	"github.com/volplane/volplane/internal/inspect"
)

// ReadCluster lists what doctor checks: every claim, volume, class,
// VolumeAttachment, node and pod (as explain reads them), the published
// CSIStorageCapacity objects, and every CSINode (which nodes run which
// driver).
func ReadCluster(ctx context.Context, client kubernetes.Interface) (*doctor.Snapshot, error) {
	f, err := inspect.ReadFacts(ctx, client, metav1.NamespaceAll)
	if err != nil {
		return nil, err
	}
	if err := inspect.ReadCapacities(ctx, client, f); err != nil {
		return nil, err
	}
	csiNodes, err := client.StorageV1().CSINodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list CSI nodes: %w", err)
	}
	s := &doctor.Snapshot{Facts: *f}
	for i := range csiNodes.Items {
		s.CSINodes = append(s.CSINodes, &csiNodes.Items[i])
	}
	return s, nil
}

// Listing is what one CSI controller endpoint said: what it serves (its
// driver, its node and topology segment when it serves a node too) and
// every volume ListVolumes lists there, with each volume's status.
type Listing struct {
	Endpoint string
	Info     csi.Info
	Entries  []*csipb.ListVolumesResponse_Entry
	// ListsSnapshots: the driver has LIST_SNAPSHOTS, and Snapshots are
	// every snapshot ListSnapshots lists there.
	ListsSnapshots bool
	Snapshots      []*csipb.Snapshot
	// ListsHealth: the driver has LIST_VOLUME_HEALTH, and Health are the
	// abnormal volumes ControllerListVolumeHealth lists there.
	ListsHealth bool
	Health      []*csipb.VolumeHealth
}

// ListVolumes dials each CSI controller endpoint ("unix:///path") and
// lists its volumes, every page, and its snapshots when the driver lists
// them (LIST_SNAPSHOTS): the one reader of the drivers' volumes,
// for doctor (ReadBackends) and for the invariants (ReadInvariants).
func ListVolumes(ctx context.Context, endpoints []string) ([]Listing, error) {
	out := []Listing{}
	for _, addr := range endpoints {
		l, err := listVolumes(ctx, addr)
		if err != nil {
			return nil, err
		}
		out = append(out, l)
	}
	return out, nil
}

func listVolumes(ctx context.Context, addr string) (Listing, error) {
	ep, err := csi.Dial(ctx, addr, nil)
	if err != nil {
		return Listing{}, err
	}
	defer ep.Close()
	info := ep.Info
	if !info.Controller || !info.List {
		return Listing{}, errors.New("csi endpoint " + addr + ": driver " + info.Driver +
			" serves no controller ListVolumes there (give controller endpoints only)")
	}
	entries, err := ep.ListVolumes(ctx)
	if err != nil {
		return Listing{}, fmt.Errorf("csi endpoint %s: ListVolumes: %w", addr, err)
	}
	l := Listing{Endpoint: addr, Info: info, Entries: entries}
	if info.ListSnapshots {
		if l.Snapshots, err = ep.ListSnapshots(ctx, &csipb.ListSnapshotsRequest{}); err != nil {
			return Listing{}, fmt.Errorf("csi endpoint %s: ListSnapshots: %w", addr, err)
		}
		l.ListsSnapshots = true
	}
	if info.ListVolumeHealth {
		// Health is an extra: a driver that fails to list it leaves the
		// health check to the claims' status, not the whole doctor.
		if h, err := ep.ControllerListVolumeHealth(ctx); err == nil {
			l.Health, l.ListsHealth = h, true
		}
	}
	return l, nil
}

// ReadBackends lists each CSI controller endpoint's volumes as doctor
// compares them with the PVs.
func ReadBackends(ctx context.Context, endpoints []string) ([]doctor.Backend, error) {
	listings, err := ListVolumes(ctx, endpoints)
	if err != nil {
		return nil, err
	}
	out := []doctor.Backend{}
	for _, l := range listings {
		out = append(out, doctorBackend(l))
	}
	return out, nil
}

func doctorBackend(l Listing) doctor.Backend {
	info := l.Info
	b := doctor.Backend{Driver: info.Driver}
	if info.Node && info.Accessibility && len(info.Topology) > 0 {
		b.Topology, b.Node = info.Topology, info.NodeID
	}
	for _, e := range l.Entries {
		v := e.GetVolume()
		bv := doctor.BackendVolume{ID: v.GetVolumeId(), CapacityBytes: v.GetCapacityBytes(), Context: v.GetVolumeContext()}
		for _, t := range v.GetAccessibleTopology() {
			bv.Accessible = append(bv.Accessible, t.GetSegments())
		}
		b.Volumes = append(b.Volumes, bv)
	}
	b.ListsSnapshots = l.ListsSnapshots
	if l.ListsHealth {
		b.Health = map[string][]v1.VolumeHealthCondition{}
		for _, h := range l.Health {
			if c := health.VolumeConditions(h); len(c) > 0 {
				b.Health[h.GetVolumeId()] = c
			}
		}
	}
	for _, snap := range l.Snapshots {
		b.Snapshots = append(b.Snapshots, doctor.BackendSnapshot{ID: snap.GetSnapshotId(), Source: snap.GetSourceVolumeId(), SizeBytes: snap.GetSizeBytes()})
	}
	return b
}
