package checkup

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/volplane/volplane/internal/csi"
	"github.com/volplane/volplane/internal/doctor"
)

// ReadCluster lists what doctor checks: every claim, volume, class,
// VolumeAttachment, node and pod.
func ReadCluster(ctx context.Context, client kubernetes.Interface) (*doctor.Snapshot, error) {
	s := &doctor.Snapshot{}
	core, storage, all := client.CoreV1(), client.StorageV1(), metav1.ListOptions{}
	claims, err := core.PersistentVolumeClaims(metav1.NamespaceAll).List(ctx, all)
	if err != nil {
		return nil, fmt.Errorf("list claims: %w", err)
	}
	s.Claims = pointers(claims.Items)
	pvs, err := core.PersistentVolumes().List(ctx, all)
	if err != nil {
		return nil, fmt.Errorf("list volumes: %w", err)
	}
	s.Volumes = pointers(pvs.Items)
	classes, err := storage.StorageClasses().List(ctx, all)
	if err != nil {
		return nil, fmt.Errorf("list storage classes: %w", err)
	}
	s.Classes = pointers(classes.Items)
	vas, err := storage.VolumeAttachments().List(ctx, all)
	if err != nil {
		return nil, fmt.Errorf("list volume attachments: %w", err)
	}
	s.Attachments = pointers(vas.Items)
	nodes, err := core.Nodes().List(ctx, all)
	if err != nil {
		return nil, fmt.Errorf("list nodes: %w", err)
	}
	s.Nodes = pointers(nodes.Items)
	pods, err := core.Pods(metav1.NamespaceAll).List(ctx, all)
	if err != nil {
		return nil, fmt.Errorf("list pods: %w", err)
	}
	s.Pods = pointers(pods.Items)
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

// pointers turns a List's items into pointers to them.
func pointers[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}
