package checkup

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/volplane/volplane/internal/csi"
	"github.com/volplane/volplane/internal/doctor"
	"github.com/volplane/volplane/internal/inspect"
)

// ReadCluster lists what doctor checks: every claim, volume, class,
// VolumeAttachment, node and pod (as explain reads them), and every
// CSINode (which nodes run which driver).
func ReadCluster(ctx context.Context, client kubernetes.Interface) (*doctor.Snapshot, error) {
	f, err := inspect.ReadFacts(ctx, client, metav1.NamespaceAll)
	if err != nil {
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

// ReadBackends dials each CSI controller endpoint ("unix:///path") and
// lists its volumes.
func ReadBackends(ctx context.Context, endpoints []string) ([]doctor.Backend, error) {
	out := []doctor.Backend{}
	for _, addr := range endpoints {
		b, err := readBackend(ctx, addr)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

func readBackend(ctx context.Context, addr string) (doctor.Backend, error) {
	ep, err := csi.Dial(ctx, addr, nil)
	if err != nil {
		return doctor.Backend{}, err
	}
	defer ep.Close()
	info := ep.Info
	if !info.Controller || !info.List {
		return doctor.Backend{}, errors.New("csi endpoint " + addr + ": driver " + info.Driver +
			" serves no controller ListVolumes there (give controller endpoints only)")
	}
	b := doctor.Backend{Driver: info.Driver}
	if info.Node && info.Accessibility && len(info.Topology) > 0 {
		b.Topology, b.Node = info.Topology, info.NodeID
	}
	entries, err := ep.ListVolumes(ctx)
	if err != nil {
		return doctor.Backend{}, fmt.Errorf("csi endpoint %s: ListVolumes: %w", addr, err)
	}
	for _, e := range entries {
		v := e.GetVolume()
		bv := doctor.BackendVolume{ID: v.GetVolumeId(), CapacityBytes: v.GetCapacityBytes(), Context: v.GetVolumeContext()}
		for _, t := range v.GetAccessibleTopology() {
			bv.Accessible = append(bv.Accessible, t.GetSegments())
		}
		b.Volumes = append(b.Volumes, bv)
	}
	return b, nil
}
