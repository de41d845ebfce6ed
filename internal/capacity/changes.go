package capacity

import (
	"maps"
	"slices"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// Which changes of a Node or CSINode can change the segments (Segments):
// a segment is made of the topology keys a CSINode lists for a driver and
// the Node's labels for those keys, so a Node's status (its heartbeat, its
// conditions turning Ready) and a CSINode's node IDs and allocatable counts
// change nothing the capacity loop derives. A test holds Segments equal
// across every change these call irrelevant.

// NodeChanged: the Node's labels.
func NodeChanged(old, cur *v1.Node) bool { return !maps.Equal(old.Labels, cur.Labels) }

// CSINodeChanged: the drivers it lists, or the topology keys of one.
func CSINodeChanged(old, cur *storagev1.CSINode) bool {
	return !maps.EqualFunc(driverKeys(old), driverKeys(cur), slices.Equal[[]string])
}

func driverKeys(cn *storagev1.CSINode) map[string][]string {
	m := make(map[string][]string, len(cn.Spec.Drivers))
	for _, d := range cn.Spec.Drivers {
		m[d.Name] = slices.Sorted(slices.Values(d.TopologyKeys))
	}
	return m
}

// NodeSegment is the segment one node puts driver on: the values of the
// topology keys its CSINode lists for driver, in its Node's labels. ok is
// false when either object is missing (nil), the CSINode does not list the
// driver, or the Node lacks one of the labels.
func NodeSegment(driver string, csiNode *storagev1.CSINode, node *v1.Node) (Segment, bool) {
	if csiNode == nil || node == nil {
		return nil, false
	}
	keys, ok := DriverKeys(csiNode, driver)
	if !ok {
		return nil, false
	}
	return segmentOn(node, keys)
}
