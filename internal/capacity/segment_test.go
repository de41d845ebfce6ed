package capacity

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

const driver = "hostpath.csi.volplane.io"

func node(name string, labels map[string]string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

func csiNode(name string, drivers map[string][]string) *storagev1.CSINode {
	cn := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for d, keys := range drivers {
		cn.Spec.Drivers = append(cn.Spec.Drivers, storagev1.CSINodeDriver{Name: d, NodeID: name, TopologyKeys: keys})
	}
	return cn
}

func TestSegments(t *testing.T) {
	zone := "topology.kubernetes.io/zone"
	host := "topology.volplane.io/node"
	cases := []struct {
		name     string
		csiNodes []*storagev1.CSINode
		nodes    []*v1.Node
		want     []string
	}{
		{"one segment per node, sorted keys",
			[]*storagev1.CSINode{csiNode("b", map[string][]string{driver: {zone, host}}), csiNode("a", map[string][]string{driver: {host, zone}})},
			[]*v1.Node{node("a", map[string]string{host: "a", zone: "z1"}), node("b", map[string]string{host: "b", zone: "z1"})},
			[]string{"topology.kubernetes.io/zone=z1,topology.volplane.io/node=a", "topology.kubernetes.io/zone=z1,topology.volplane.io/node=b"}},
		{"nodes sharing a segment give it once",
			[]*storagev1.CSINode{csiNode("a", map[string][]string{driver: {zone}}), csiNode("b", map[string][]string{driver: {zone}})},
			[]*v1.Node{node("a", map[string]string{zone: "z1"}), node("b", map[string]string{zone: "z1"})},
			[]string{"topology.kubernetes.io/zone=z1"}},
		{"a CSINode without the driver, or without its Node, adds nothing",
			[]*storagev1.CSINode{csiNode("a", map[string][]string{"other": {host}}), csiNode("gone", map[string][]string{driver: {host}})},
			[]*v1.Node{node("a", map[string]string{host: "a"})},
			[]string{}},
		{"a node without one of the labels adds nothing",
			[]*storagev1.CSINode{csiNode("a", map[string][]string{driver: {host, zone}})},
			[]*v1.Node{node("a", map[string]string{host: "a"})},
			[]string{}},
		{"a driver without topology keys has the empty segment (every node)",
			[]*storagev1.CSINode{csiNode("a", map[string][]string{driver: nil}), csiNode("b", map[string][]string{driver: {}})},
			[]*v1.Node{node("a", nil), node("b", nil)},
			[]string{""}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := []string{}
			for _, s := range Segments(driver, tc.csiNodes, tc.nodes) {
				got = append(got, s.Key())
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("segments = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestSegmentSelectorRoundTrip(t *testing.T) {
	s := SegmentOf(map[string]string{"b": "2", "a": "1"})
	if s.Key() != "a=1,b=2" {
		t.Errorf("key = %q", s.Key())
	}
	back, ok := FromSelector(s.Selector())
	if !ok || back.Key() != s.Key() {
		t.Errorf("from selector = %v %v", back, ok)
	}
	if _, ok := FromSelector(&metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: metav1.LabelSelectorOpExists}}}); ok {
		t.Error("a selector with expressions stands for no segment")
	}
	if !s.Holds(map[string]string{"a": "1", "b": "2", "c": "3"}) || s.Holds(map[string]string{"a": "1"}) {
		t.Error("Holds is wrong")
	}
}

func TestClasses(t *testing.T) {
	class := func(name, prov string, mode *storagev1.VolumeBindingMode) *storagev1.StorageClass {
		return &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: prov, VolumeBindingMode: mode}
	}
	all := []*storagev1.StorageClass{
		class("wffc", driver, ptr.To(storagev1.VolumeBindingWaitForFirstConsumer)),
		class("immediate", driver, ptr.To(storagev1.VolumeBindingImmediate)),
		class("unset", driver, nil),
		class("other", "other.csi", ptr.To(storagev1.VolumeBindingWaitForFirstConsumer)),
	}
	names := func(cs []*storagev1.StorageClass) []string {
		var out []string
		for _, c := range cs {
			out = append(out, c.Name)
		}
		return out
	}
	if got := names(Classes(driver, all, false)); !reflect.DeepEqual(got, []string{"unset", "wffc"}) {
		t.Errorf("classes = %v, want the driver's WaitForFirstConsumer ones (and unset, as the reference)", got)
	}
	if got := names(Classes(driver, all, true)); !reflect.DeepEqual(got, []string{"immediate", "unset", "wffc"}) {
		t.Errorf("classes with immediate = %v", got)
	}
}

func TestManagedBy(t *testing.T) {
	if ManagedBy("") != "volplane" || ManagedBy("node-1") != "volplane-node-1" {
		t.Errorf("managed-by = %q, %q", ManagedBy(""), ManagedBy("node-1"))
	}
	long := ManagedBy("a-very-long-node-name-that-goes-on-and-on-and-on-past-the-limit.example.com")
	if len(long) != 63 || long == ManagedBy("a-very-long-node-name-that-goes-on-and-on-and-on-past-the-limit.example.org") {
		t.Errorf("long managed-by = %q (%d): want 63 characters, distinct per node", long, len(long))
	}
}
