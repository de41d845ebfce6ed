package snapshotbinding

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/internal/snapshotapi"
)

const topologyKey = "topology.volplane.io/node"

func node(name string, labels map[string]string) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

// onNodes is volume() whose required node affinity is terms.
func onNodes(terms ...corev1.NodeSelectorTerm) *corev1.PersistentVolume {
	pv := volume()
	pv.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: terms}}
	return pv
}

func in(key string, values ...string) corev1.NodeSelectorTerm {
	return corev1.NodeSelectorTerm{MatchExpressions: []corev1.NodeSelectorRequirement{
		{Key: key, Operator: corev1.NodeSelectorOpIn, Values: values}}}
}

// The label names the one node the source volume's affinity admits, as
// the reference's distributed snapshotting; never a node it cannot tell
// apart from another.
func TestManagedByIsTheOneNodeOfTheSourceVolume(t *testing.T) {
	nodes := []*corev1.Node{
		node("node-1", map[string]string{topologyKey: "node-1", "zone": "a"}),
		node("node-2", map[string]string{topologyKey: "node-2", "zone": "a"}),
		node("node-3", map[string]string{topologyKey: "node-3", "zone": "b"}),
	}
	cases := []struct {
		name  string
		pv    *corev1.PersistentVolume
		nodes []*corev1.Node
		want  string
	}{
		{"no volume", nil, nodes, ""},
		{"no node affinity (a network volume)", volume(), nodes, ""},
		{"an affinity without terms", onNodes(), nodes, ""},
		{"the node-local driver's topology", onNodes(in(topologyKey, "node-2")), nodes, "node-2"},
		{"by the node's name", onNodes(corev1.NodeSelectorTerm{MatchFields: []corev1.NodeSelectorRequirement{
			{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{"node-3"}}}}), nodes, "node-3"},
		{"a zone of two nodes: no label (the reference labels either)", onNodes(in("zone", "a")), nodes, ""},
		{"a zone of one node", onNodes(in("zone", "b")), nodes, "node-3"},
		{"two terms, one node each", onNodes(in(topologyKey, "node-1"), in(topologyKey, "node-3")), nodes, ""},
		{"a node that is gone", onNodes(in(topologyKey, "node-9")), nodes, ""},
		{"no node read", onNodes(in(topologyKey, "node-1")), nil, ""},
		{"an invalid requirement admits no node", onNodes(in("not a key!", "x")), nodes, ""},
		// A node writes its own labels: one that claims another node's
		// topology makes the volume's node ambiguous, and gets nothing.
		{"a node claiming another's topology", onNodes(in(topologyKey, "node-1")),
			append(nodes, node("node-evil", map[string]string{topologyKey: "node-1"})), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := ManagedBy(tc.pv, tc.nodes); got != tc.want {
				t.Errorf("ManagedBy = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestANewContentCarriesTheNodeLabel(t *testing.T) {
	s := dyn("snap", withClass("snaps"))
	f := facts(s, nil)
	f.ManagedBy = "node-2"
	p := DecideSnapshot(f)
	if p.Create == nil || len(p.Create.Labels) != 1 || p.Create.Labels[snapshotapi.ManagedByLabel] != "node-2" {
		t.Fatalf("plan %+v: want the content created with label %s=node-2", p.Create, snapshotapi.ManagedByLabel)
	}
	f.ManagedBy = ""
	if p := DecideSnapshot(f); p.Create == nil || p.Create.Labels != nil {
		t.Fatalf("plan %+v: want the content created without a label", p.Create)
	}
}
