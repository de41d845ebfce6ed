package capacity

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

const (
	zoneKey = "topology.kubernetes.io/zone"
	hostKey = "topology.volplane.io/node"
	rackKey = "example.com/rack"
)

var (
	drivers  = []string{driver, "other.csi.example.com"}
	topoKeys = []string{zoneKey, hostKey, rackKey}
)

// randomNode is a Node with some of the topology labels, and others.
func randomNode(r *rand.Rand, name string) *v1.Node {
	n := node(name, map[string]string{"kubernetes.io/os": "linux"})
	for _, k := range topoKeys {
		if r.IntN(4) > 0 {
			n.Labels[k] = fmt.Sprintf("v%d", r.IntN(3))
		}
	}
	return n
}

// randomCSINode lists some of the drivers with some of the keys.
func randomCSINode(r *rand.Rand, name string) *storagev1.CSINode {
	ds := map[string][]string{}
	for _, d := range drivers {
		if r.IntN(4) == 0 {
			continue
		}
		var keys []string
		for _, k := range topoKeys {
			if r.IntN(2) == 0 {
				keys = append(keys, k)
			}
		}
		ds[d] = keys
	}
	return csiNode(name, ds)
}

func segmentKeys(segs []Segment) []string {
	out := make([]string, 0, len(segs))
	for _, s := range segs {
		out = append(out, s.Key())
	}
	return out
}

// mutateNode changes a copy of n at random, often only in what no segment
// reads.
func mutateNode(r *rand.Rand, n *v1.Node) *v1.Node {
	c := n.DeepCopy()
	switch r.IntN(5) {
	case 0:
		c.Status.Conditions = []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue}}
	case 1:
		c.Annotations = map[string]string{"heartbeat": fmt.Sprint(r.Int())}
	case 2:
		c.Spec.Unschedulable = !c.Spec.Unschedulable
	case 3:
		c.Labels["unrelated"] = fmt.Sprint(r.IntN(2))
	default:
		c.Labels = randomNode(r, n.Name).Labels
	}
	return c
}

// mutateCSINode changes a copy of cn at random, often only in what no
// segment reads.
func mutateCSINode(r *rand.Rand, cn *storagev1.CSINode) *storagev1.CSINode {
	c := cn.DeepCopy()
	switch r.IntN(4) {
	case 0:
		for i := range c.Spec.Drivers {
			c.Spec.Drivers[i].NodeID = fmt.Sprint(r.Int())
			c.Spec.Drivers[i].Allocatable = &storagev1.VolumeNodeResources{Count: ptr.To(int32(r.IntN(100)))}
		}
	case 1:
		for i := range c.Spec.Drivers {
			slices.Reverse(c.Spec.Drivers[i].TopologyKeys)
		}
		slices.Reverse(c.Spec.Drivers)
	case 2:
		c.OwnerReferences = []metav1.OwnerReference{{Name: "node", UID: "u"}}
	default:
		c.Spec = randomCSINode(r, cn.Name).Spec
	}
	return c
}

// TestIrrelevantChangesKeepSegments: a Node or CSINode change that
// NodeChanged or CSINodeChanged calls irrelevant leaves every driver's
// segments, and the node's own segment, as they were.
func TestIrrelevantChangesKeepSegments(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	irrelevant := 0
	for range 3000 {
		names := []string{"a", "b", "c"}
		var nodes []*v1.Node
		var csiNodes []*storagev1.CSINode
		for _, n := range names {
			nodes, csiNodes = append(nodes, randomNode(r, n)), append(csiNodes, randomCSINode(r, n))
		}
		i := r.IntN(len(names))
		nodes2, csiNodes2 := slices.Clone(nodes), slices.Clone(csiNodes)
		var changed bool
		if r.IntN(2) == 0 {
			nodes2[i] = mutateNode(r, nodes[i])
			changed = NodeChanged(nodes[i], nodes2[i])
		} else {
			csiNodes2[i] = mutateCSINode(r, csiNodes[i])
			changed = CSINodeChanged(csiNodes[i], csiNodes2[i])
		}
		if changed {
			continue
		}
		irrelevant++
		for _, d := range drivers {
			before, after := segmentKeys(Segments(d, csiNodes, nodes)), segmentKeys(Segments(d, csiNodes2, nodes2))
			if !slices.Equal(before, after) {
				t.Fatalf("driver %s: an irrelevant change moved the segments from %v to %v", d, before, after)
			}
			s1, ok1 := NodeSegment(d, csiNodes[i], nodes[i])
			s2, ok2 := NodeSegment(d, csiNodes2[i], nodes2[i])
			if ok1 != ok2 || s1.Key() != s2.Key() {
				t.Fatalf("driver %s: an irrelevant change moved node %s from %q (%v) to %q (%v)", d, names[i], s1.Key(), ok1, s2.Key(), ok2)
			}
		}
	}
	if irrelevant < 1000 {
		t.Fatalf("only %d irrelevant changes drawn", irrelevant)
	}
}

// TestMembershipIsSegments: Membership kept one node at a time has the
// segments Segments derives from all Nodes and CSINodes, and Set reports
// exactly the segments that appeared or went away.
func TestMembershipIsSegments(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	names := []string{"a", "b", "c", "d", "e", "f"}
	for run := range 200 {
		var m Membership
		nodes, csiNodes := map[string]*v1.Node{}, map[string]*storagev1.CSINode{}
		for step := range 60 {
			name := names[r.IntN(len(names))]
			switch r.IntN(6) {
			case 0:
				delete(nodes, name)
			case 1:
				delete(csiNodes, name)
			case 2, 3:
				if n := nodes[name]; n != nil {
					nodes[name] = mutateNode(r, n)
				} else {
					nodes[name] = randomNode(r, name)
				}
			default:
				if cn := csiNodes[name]; cn != nil {
					csiNodes[name] = mutateCSINode(r, cn)
				} else {
					csiNodes[name] = randomCSINode(r, name)
				}
			}
			nodeList, csiNodeList := slices.Collect(maps.Values(nodes)), slices.Collect(maps.Values(csiNodes))
			for _, d := range drivers {
				before := segmentKeys(m.Segments(d))
				seg, ok := NodeSegment(d, csiNodes[name], nodes[name])
				changed := m.Set(d, name, seg, ok)
				got, want := segmentKeys(m.Segments(d)), segmentKeys(Segments(d, csiNodeList, nodeList))
				if !slices.Equal(got, want) {
					t.Fatalf("run %d step %d driver %s: Membership has %v, Segments %v", run, step, d, got, want)
				}
				var diff []string
				for _, k := range before {
					if !slices.Contains(got, k) {
						diff = append(diff, k)
					}
				}
				for _, k := range got {
					if !slices.Contains(before, k) {
						diff = append(diff, k)
					}
				}
				slices.Sort(diff)
				slices.Sort(changed)
				if !slices.Equal(diff, changed) {
					t.Fatalf("run %d step %d driver %s: Set reported %v, the segments changed by %v", run, step, d, changed, diff)
				}
				for _, k := range got {
					if s, ok := m.Segment(d, k); !ok || s.Key() != k {
						t.Fatalf("Segment(%s, %q) = %q, %v", d, k, s.Key(), ok)
					}
				}
			}
		}
	}
}

// TestDecideBySegment: deciding each segment alone (its items, the objects
// of its segment) gives the plan deciding all at once gives, but for the
// objects whose nodeTopology is not plain matchLabels, which only the
// whole decision deletes: the capacity loop's per-segment syncs publish
// what its whole syncs would.
func TestDecideBySegment(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	segs := []Segment{segA, segB, SegmentOf(map[string]string{hostKey: "c"}), SegmentOf(nil)}
	classNames := []string{"fast", "slow", "immediate"}
	for run := range 2000 {
		var present []Segment
		for _, s := range segs {
			if r.IntN(3) > 0 {
				present = append(present, s)
			}
		}
		var classes []*storagev1.StorageClass
		for _, c := range classNames[:1+r.IntN(2)] {
			classes = append(classes, &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: c}, Provisioner: driver})
		}
		items := Items(present, classes)
		answers, inFlight := map[string]Answer{}, map[string]int64{}
		for _, it := range items {
			if r.IntN(4) > 0 {
				answers[it.Key()] = answer(int64(r.IntN(4)) * gi)
			}
			if r.IntN(3) == 0 {
				inFlight[it.Key()] = int64(r.IntN(2)) * gi
			}
		}
		var existing []*storagev1.CSIStorageCapacity
		for i := range r.IntN(10) {
			o := object(fmt.Sprintf("o%d", i), classNames[r.IntN(len(classNames))], segs[r.IntN(len(segs))], int64(r.IntN(4))*gi)
			switch r.IntN(8) {
			case 0:
				o.OwnerReferences = []metav1.OwnerReference{{Name: "x", UID: "other", Controller: ptr.To(true)}}
			case 1:
				o.NodeTopology.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: hostKey, Operator: metav1.LabelSelectorOpExists}}
			case 2:
				o.Labels[DriverNameLabel] = "other.csi.example.com"
			case 3:
				o.OwnerReferences = nil
			}
			existing = append(existing, o)
		}
		f := Facts{Identity: id, Items: items, Answers: answers, InFlight: inFlight, Existing: existing}
		whole := summary(Decide(f))
		var plain []string
		for _, line := range whole {
			if !slices.ContainsFunc(existing, func(o *storagev1.CSIStorageCapacity) bool {
				_, _, ok := SegmentKeyOf(o)
				return !ok && line == fmt.Sprintf("delete %s %s", o.Name, Obsolete)
			}) {
				plain = append(plain, line)
			}
		}
		var parts []string
		for _, s := range segs {
			g := f
			g.Items, g.Existing = nil, nil
			for _, it := range items {
				if it.Segment.Key() == s.Key() {
					g.Items = append(g.Items, it)
				}
			}
			for _, o := range existing {
				if d, k, ok := SegmentKeyOf(o); ok && d == driver && k == s.Key() {
					g.Existing = append(g.Existing, o)
				}
			}
			parts = append(parts, summary(Decide(g))...)
		}
		slices.Sort(plain)
		slices.Sort(parts)
		if !slices.Equal(plain, parts) {
			t.Fatalf("run %d: whole %v, by segment %v", run, plain, parts)
		}
	}
}
