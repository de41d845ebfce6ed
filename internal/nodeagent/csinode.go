package nodeagent

import (
	"context"
	"fmt"
	"maps"
	"slices"

	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"
)

// registerCSINode records the node's drivers in its CSINode as the
// kubelet's plugin registration does: name, node ID, topology keys, and the
// volume limit as allocatable count. Drivers of others are kept.
func (a *Agent) registerCSINode(ctx context.Context, n *nodeState) error {
	api := a.cfg.Client.StorageV1().CSINodes()
	cur, err := api.Get(ctx, n.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		cur, err = a.newCSINode(ctx, n.name)
	}
	if err != nil {
		return fmt.Errorf("node agent: CSINode %s: %w", n.name, err)
	}
	upd := cur.DeepCopy()
	for _, name := range slices.Sorted(maps.Keys(n.endpoints)) {
		upd.Spec.Drivers = withDriver(upd.Spec.Drivers, csiNodeDriver(name, n.endpoints[name].Info.NodeID,
			n.endpoints[name].Info.Topology, n.endpoints[name].Info.MaxVolumes))
	}
	if equality.Semantic.DeepEqual(cur.Spec, upd.Spec) {
		return nil
	}
	if _, err := api.Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("node agent: register drivers in CSINode %s: %w", n.name, err)
	}
	klog.FromContext(ctx).Info("Registered CSI drivers", "node", n.name, "drivers", len(n.endpoints))
	return nil
}

// newCSINode creates the node's CSINode, owned by the Node as the kubelet
// makes it, so it goes with the node.
func (a *Agent) newCSINode(ctx context.Context, name string) (*storagev1.CSINode, error) {
	obj := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if node, err := a.cfg.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); err == nil {
		obj.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: name, UID: node.UID}}
	}
	created, err := a.cfg.Client.StorageV1().CSINodes().Create(ctx, obj, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return a.cfg.Client.StorageV1().CSINodes().Get(ctx, name, metav1.GetOptions{})
	}
	return created, err
}

func csiNodeDriver(name, nodeID string, topology map[string]string, maxVolumes int64) storagev1.CSINodeDriver {
	d := storagev1.CSINodeDriver{Name: name, NodeID: nodeID, TopologyKeys: slices.Sorted(maps.Keys(topology))}
	if maxVolumes > 0 {
		count := int32(min(maxVolumes, int64(1<<31-1)))
		d.Allocatable = &storagev1.VolumeNodeResources{Count: &count}
	}
	return d
}

// withDriver replaces the entry of d's driver, or appends it.
func withDriver(drivers []storagev1.CSINodeDriver, d storagev1.CSINodeDriver) []storagev1.CSINodeDriver {
	for i := range drivers {
		if drivers[i].Name == d.Name {
			drivers[i] = d
			return drivers
		}
	}
	return append(drivers, d)
}
