package explain

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/volplane/volplane/internal/binding"
)

// NodeFit says whether a node can hold a pending WaitForFirstConsumer
// claim, as the scheduler reads the CSIStorageCapacity objects of its class
// (volumebinding's hasEnoughCapacity).
type NodeFit string

const (
	// NodeFits: an object of the class covers the node and its
	// maximumVolumeSize (else capacity) is at least the request.
	NodeFits NodeFit = "Fits"
	// NodeTooSmall: objects cover the node, none with room for the request.
	NodeTooSmall NodeFit = "NotEnoughCapacity"
	// NodeUnpublished: no object of the class covers the node; the
	// scheduler then finds it does not fit.
	NodeUnpublished NodeFit = "NoCapacityPublished"
)

// NodeCapacity is what one node offers the claim.
type NodeCapacity struct {
	Node string  `json:"node"`
	Fit  NodeFit `json:"fit"`
	// Capacity and MaximumVolumeSize are the largest object's covering the
	// node; Object is that object, "namespace/name".
	Capacity          string `json:"capacity,omitempty"`
	MaximumVolumeSize string `json:"maximumVolumeSize,omitempty"`
	Object            string `json:"object,omitempty"`
}

// String is the node's line for people.
func (n NodeCapacity) String() string {
	switch n.Fit {
	case NodeUnpublished:
		return "no capacity published for the class"
	case NodeFits:
		return "room: " + n.room()
	}
	return "too small: " + n.room()
}

func (n NodeCapacity) room() string {
	if n.MaximumVolumeSize != "" && n.MaximumVolumeSize != n.Capacity {
		return fmt.Sprintf("capacity %s, largest volume %s (%s)", n.Capacity, n.MaximumVolumeSize, n.Object)
	}
	return fmt.Sprintf("capacity %s (%s)", n.Capacity, n.Object)
}

// capacityOf is, for an unbound claim of a WaitForFirstConsumer class whose
// driver has storageCapacity on (else the scheduler checks none), what
// each node offers it; nil otherwise. The caller asks only for a claim no
// existing volume may serve (leftToScheduler): the scheduler checks
// capacity only for a claim to provision.
func capacityOf(claim *v1.PersistentVolumeClaim, class *storagev1.StorageClass, f *Facts) []NodeCapacity {
	if class == nil || !binding.DelayBinding(class) || !unbound(claim) || !tracksCapacity(class.Provisioner, f.Drivers) {
		return nil
	}
	request, ok := claim.Spec.Resources.Requests[v1.ResourceStorage]
	if !ok {
		return nil
	}
	var out []NodeCapacity
	for _, node := range f.Nodes {
		out = append(out, nodeCapacity(node, class.Name, request, f.Capacities))
	}
	slices.SortFunc(out, func(a, b NodeCapacity) int { return cmp.Compare(a.Node, b.Node) })
	return out
}

// leftToScheduler: an existing volume may serve the claim once the
// scheduler picks a node; it checks capacity only where none does.
func leftToScheduler(vs []binding.Verdict) bool {
	return slices.ContainsFunc(vs, func(v binding.Verdict) bool { return v.Reason == binding.ReasonWaitForFirstConsumer })
}

// tracksCapacity: the CSIDriver of the provisioner says storageCapacity.
func tracksCapacity(driver string, drivers []*storagev1.CSIDriver) bool {
	d := named(drivers, driver)
	return d != nil && d.Spec.StorageCapacity != nil && *d.Spec.StorageCapacity
}

// nodeCapacity is the scheduler's check of one node: any object of the
// class whose nodeTopology selects the node and whose maximumVolumeSize
// (else capacity) is at least the request.
func nodeCapacity(node *v1.Node, class string, request resource.Quantity, objects []*storagev1.CSIStorageCapacity) NodeCapacity {
	n := NodeCapacity{Node: node.Name, Fit: NodeUnpublished}
	var best *resource.Quantity
	for _, o := range objects {
		if o.StorageClassName != class || o.NodeTopology == nil {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(o.NodeTopology)
		if err != nil || !sel.Matches(labels.Set(node.Labels)) {
			continue
		}
		room := o.Capacity
		if o.MaximumVolumeSize != nil {
			room = o.MaximumVolumeSize
		}
		if room == nil || best != nil && room.Cmp(*best) <= 0 {
			continue
		}
		best = room
		n.Fit, n.Capacity, n.MaximumVolumeSize, n.Object = NodeTooSmall, quantityString(o.Capacity), quantityString(o.MaximumVolumeSize), o.Namespace+"/"+o.Name
	}
	if best != nil && best.Cmp(request) >= 0 {
		n.Fit = NodeFits
	}
	return n
}

func quantityString(q *resource.Quantity) string {
	if q == nil {
		return ""
	}
	return q.String()
}

// Room is the largest volume the node's object allows, as the scheduler
// compares it with the request: its maximumVolumeSize, else its capacity;
// "" when no object covers the node.
func (n NodeCapacity) Room() string {
	if n.MaximumVolumeSize != "" {
		return n.MaximumVolumeSize
	}
	return n.Capacity
}

// NoNodeHolds: capacity was checked on some node and no node fits.
func NoNodeHolds(nodes []NodeCapacity) bool {
	return len(nodes) > 0 && !slices.ContainsFunc(nodes, func(n NodeCapacity) bool { return n.Fit == NodeFits })
}

// noNodeHolds is the summary of a claim no node can hold by the published
// capacity, node by node; "" when some node can (or none was checked).
func noNodeHolds(claim *v1.PersistentVolumeClaim, class string, nodes []NodeCapacity) string {
	if !NoNodeHolds(nodes) {
		return ""
	}
	request := claim.Spec.Resources.Requests[v1.ResourceStorage]
	var parts []string
	for _, n := range nodes {
		switch n.Fit {
		case NodeUnpublished:
			parts = append(parts, n.Node+" publishes none")
		default:
			parts = append(parts, fmt.Sprintf("%s has %s", n.Node, n.Room()))
		}
	}
	return fmt.Sprintf("No node can hold this claim's %s of class %s by the capacity its driver publishes: %s. "+
		"The scheduler places no pod using it until a node has room: ask for less, or free or add space on a node.",
		request.String(), class, strings.Join(parts, ", "))
}

// capacity writes the "Capacity" section: each node's offer.
func (t *table) capacity(nodes []NodeCapacity) {
	var names, lines []string
	for _, n := range nodes {
		names, lines = append(names, n.Node), append(lines, n.String())
	}
	t.perNode("Capacity", names, lines)
}
