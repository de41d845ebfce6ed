package nodeagent

import (
	"context"
	"fmt"

	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/volplane/volplane/internal/mounting"
)

// registerCSINode records the node's drivers in its CSINode as
// mounting.RegisterDrivers decides, writing only a change.
func (a *Agent) registerCSINode(ctx context.Context, n *nodeState) error {
	drivers := make([]mounting.NodeDriver, 0, len(n.endpoints))
	for name, e := range n.endpoints {
		drivers = append(drivers, mounting.NodeDriver{Name: name, NodeID: e.Info.NodeID, Topology: e.Info.Topology, MaxVolumes: e.Info.MaxVolumes})
	}
	if err := a.labelTopology(ctx, n.name, drivers); err != nil {
		return err
	}
	return a.writeCSINode(ctx, n, drivers)
}

// labelTopology puts the drivers' topology segments on the Node as labels
// (mounting.TopologyLabels decides), before the CSINode names the keys: the
// scheduler and the provisioner read a node's topology from its labels. A
// driver's topology comes from the administrator's driver, never from a
// user's object.
func (a *Agent) labelTopology(ctx context.Context, name string, drivers []mounting.NodeDriver) error {
	api := a.cfg.Client.CoreV1().Nodes()
	node, err := api.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("node agent: read node %s for its topology labels: %w", name, err)
	}
	labels, changed, err := mounting.TopologyLabels(node.Labels, drivers)
	if err != nil {
		return fmt.Errorf("node agent: node %s: %w", name, err)
	}
	if !changed {
		return nil
	}
	upd := node.DeepCopy()
	upd.Labels = labels
	if _, err := api.Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("node agent: label node %s with its drivers' topology: %w", name, err)
	}
	return nil
}

// writeCSINode records drivers in the node's CSINode (made if missing) as
// mounting.RegisterDrivers decides, from a live read, writing only a
// change: the kubelet's installDriverToCSINode, at registration and at
// each refresh of a driver's allocatable count.
func (a *Agent) writeCSINode(ctx context.Context, n *nodeState, drivers []mounting.NodeDriver) error {
	api := a.cfg.Client.StorageV1().CSINodes()
	cur, err := api.Get(ctx, n.name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		var created bool
		created, cur, err = a.newCSINode(ctx, n.name, drivers)
		if created {
			klog.FromContext(ctx).Info("Registered CSI drivers", "node", n.name, "drivers", len(drivers))
			return nil
		}
	}
	if err != nil {
		return fmt.Errorf("node agent: CSINode %s: %w", n.name, err)
	}
	spec, changed := mounting.RegisterDrivers(cur.Spec, drivers)
	if !changed {
		return nil
	}
	upd := cur.DeepCopy()
	upd.Spec = spec
	if _, err := api.Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("node agent: write drivers in CSINode %s: %w", n.name, err)
	}
	klog.FromContext(ctx).Info("Registered CSI drivers", "node", n.name, "drivers", len(drivers))
	return nil
}

// newCSINode creates the node's CSINode with drivers registered in it (one
// write; the kubelet creates it empty and then updates it), owned by the
// Node as the kubelet makes it, so it goes with the node. When another
// hand created it first, it returns that one, not created, for the caller
// to update.
func (a *Agent) newCSINode(ctx context.Context, name string, drivers []mounting.NodeDriver) (bool, *storagev1.CSINode, error) {
	obj := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: name}}
	obj.Spec, _ = mounting.RegisterDrivers(obj.Spec, drivers)
	if node, err := a.cfg.Client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{}); err == nil {
		obj.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: name, UID: node.UID}}
	}
	created, err := a.cfg.Client.StorageV1().CSINodes().Create(ctx, obj, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		cur, err := a.cfg.Client.StorageV1().CSINodes().Get(ctx, name, metav1.GetOptions{})
		return false, cur, err
	}
	return err == nil, created, err
}
