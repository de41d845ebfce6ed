package capacity

import (
	"cmp"
	"maps"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Entry is one topology key and its value.
type Entry struct{ Key, Value string }

// Segment is a topology segment: entries sorted by key, keys unique. The
// empty segment (a driver without topology keys) matches every node.
type Segment []Entry

// SegmentOf is the segment of a topology map (a NodeGetInfo answer, a
// CSIStorageCapacity's matchLabels).
func SegmentOf(labels map[string]string) Segment {
	s := make(Segment, 0, len(labels))
	for k, v := range labels {
		s = append(s, Entry{Key: k, Value: v})
	}
	slices.SortFunc(s, func(a, b Entry) int { return cmp.Compare(a.Key, b.Key) })
	return s
}

// Key is the segment as one string, "k1=v1,k2=v2" (a work key, a map key).
func (s Segment) Key() string {
	parts := make([]string, len(s))
	for i, e := range s {
		parts[i] = e.Key + "=" + e.Value
	}
	return strings.Join(parts, ",")
}

// Labels are the segment's entries as a map (never nil).
func (s Segment) Labels() map[string]string {
	m := make(map[string]string, len(s))
	for _, e := range s {
		m[e.Key] = e.Value
	}
	return m
}

// Selector is the segment as a CSIStorageCapacity's nodeTopology: its
// entries as matchLabels, the reference's GetLabelSelector.
func (s Segment) Selector() *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchLabels: s.Labels()}
}

// Holds says whether a node with these labels is in the segment.
func (s Segment) Holds(labels map[string]string) bool {
	for _, e := range s {
		if v, ok := labels[e.Key]; !ok || v != e.Value {
			return false
		}
	}
	return true
}

// FromSelector is the segment a nodeTopology stands for; ok is false for a
// selector that is not plain matchLabels (the loop never writes one; such
// an object matches no item).
func FromSelector(sel *metav1.LabelSelector) (Segment, bool) {
	if sel == nil || len(sel.MatchExpressions) > 0 {
		return nil, false
	}
	return SegmentOf(sel.MatchLabels), true
}

// DriverKeys are the topology keys a CSINode lists for driver; ok is false
// when the CSINode does not list the driver (an empty list is a driver
// without topology).
func DriverKeys(csiNode *storagev1.CSINode, driver string) (keys []string, ok bool) {
	for _, d := range csiNode.Spec.Drivers {
		if d.Name == driver {
			return slices.Sorted(slices.Values(d.TopologyKeys)), true
		}
	}
	return nil, false
}

// Segments are the distinct segments of driver, as the reference's node
// topology finds them (topology/nodes.go sync): for every CSINode that lists
// the driver and whose Node exists, the values of the driver's topology
// keys in the Node's labels; a node missing one of the labels adds no
// segment. Sorted by Key.
func Segments(driver string, csiNodes []*storagev1.CSINode, nodes []*v1.Node) []Segment {
	byName := make(map[string]*v1.Node, len(nodes))
	for _, n := range nodes {
		byName[n.Name] = n
	}
	seen := map[string]Segment{}
	for _, cn := range csiNodes {
		if s, ok := NodeSegment(driver, cn, byName[cn.Name]); ok {
			seen[s.Key()] = s
		}
	}
	out := make([]Segment, 0, len(seen))
	for _, k := range slices.Sorted(maps.Keys(seen)) {
		out = append(out, seen[k])
	}
	return out
}

// segmentOn is the segment of keys on node; ok is false if the node lacks
// one of the labels.
func segmentOn(node *v1.Node, keys []string) (Segment, bool) {
	s := make(Segment, 0, len(keys))
	for _, k := range keys {
		v, ok := node.Labels[k]
		if !ok {
			return nil, false
		}
		s = append(s, Entry{Key: k, Value: v})
	}
	return s, true
}
