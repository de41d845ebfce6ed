package provisioning

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	volumehelpers "k8s.io/component-helpers/storage/volume"
	"k8s.io/utils/ptr"
)

const key = "topology.volplane.io/node"

// node1 is the provisioner beside node-1's driver.
func node1(mods ...func(*Local)) Local {
	l := Local{Node: "node-1", NodeID: "node-1", Topology: map[string]string{key: "node-1"},
		NodeLabels: map[string]string{key: "node-1", "zone": "a"}, ImmediateBinding: true}
	for _, m := range mods {
		m(&l)
	}
	return l
}

func localClaim(annotations map[string]string) *v1.PersistentVolumeClaim {
	return &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", Annotations: annotations}}
}

func selected(node string) *v1.PersistentVolumeClaim {
	return localClaim(map[string]string{volumehelpers.AnnSelectedNode: node})
}

func localClass(mode storagev1.VolumeBindingMode, allowed ...v1.TopologySelectorTerm) *storagev1.StorageClass {
	return &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "sc"}, VolumeBindingMode: ptr.To(mode), AllowedTopologies: allowed}
}

var (
	immediate = localClass(storagev1.VolumeBindingImmediate)
	wffc      = localClass(storagev1.VolumeBindingWaitForFirstConsumer)
)

func term(k string, values ...string) v1.TopologySelectorTerm {
	return v1.TopologySelectorTerm{MatchLabelExpressions: []v1.TopologySelectorLabelRequirement{{Key: k, Values: values}}}
}

func TestForClaimSaysWhoseClaimItIsWithAReasonForEveryNo(t *testing.T) {
	cases := []struct {
		name   string
		local  Local
		facts  ClaimFacts
		turn   Turn
		reason Reason
	}{
		{"selected for this node: handle", node1(), ClaimFacts{Claim: selected("node-1"), Class: wffc}, Handle, ""},
		{"selected for another node: leave", node1(), ClaimFacts{Claim: selected("node-2"), Class: wffc}, Leave, ReasonOtherNode},
		{"an Immediate claim another node won: leave", node1(), ClaimFacts{Claim: selected("node-2"), Class: immediate}, Leave, ReasonOtherNode},
		{"pinned to this node's driver: handle, whatever is selected", node1(),
			ClaimFacts{Claim: selected("node-2"), Class: immediate, Pin: "node-1"}, Handle, ""},
		{"pinned to another node's driver: leave, even if selected here", node1(),
			ClaimFacts{Claim: selected("node-1"), Class: immediate, Pin: "node-2"}, Leave, ReasonPinnedElsewhere},
		{"no pin (a driver without node ID): the selected node's", node1(func(l *Local) { l.NodeID = "" }),
			ClaimFacts{Claim: selected("node-2"), Class: immediate}, Leave, ReasonOtherNode},
		{"unassigned, class unknown: leave", node1(), ClaimFacts{Claim: localClaim(nil)}, Leave, ReasonNoClass},
		{"unassigned WaitForFirstConsumer: the scheduler's", node1(), ClaimFacts{Claim: localClaim(nil), Class: wffc}, Leave, ReasonWaitsForScheduler},
		{"unassigned Immediate: race", node1(), ClaimFacts{Claim: localClaim(nil), Class: immediate}, Race, ""},
		{"unassigned Immediate, immediate binding off: leave",
			node1(func(l *Local) { l.ImmediateBinding = false }), ClaimFacts{Claim: localClaim(nil), Class: immediate}, Leave, ReasonImmediateOff},
		{"Node object not known yet: leave",
			node1(func(l *Local) { l.NodeLabels = nil }), ClaimFacts{Claim: localClaim(nil), Class: immediate}, Leave, ReasonNodeUnknown},
		{"Node lacks the driver's segment label: leave",
			node1(func(l *Local) { l.NodeLabels = map[string]string{"zone": "a"} }), ClaimFacts{Claim: localClaim(nil), Class: immediate}, Leave, ReasonNodeLacksTopology},
		{"allowed topologies name this node: race", node1(),
			ClaimFacts{Claim: localClaim(nil), Class: localClass(storagev1.VolumeBindingImmediate, term(key, "node-3", "node-1"))}, Race, ""},
		{"allowed topologies on a node label (zone) this node has: race", node1(),
			ClaimFacts{Claim: localClaim(nil), Class: localClass(storagev1.VolumeBindingImmediate, term("zone", "a"))}, Race, ""},
		{"allowed topologies exclude this node: leave", node1(),
			ClaimFacts{Claim: localClaim(nil), Class: localClass(storagev1.VolumeBindingImmediate, term(key, "node-2"), term("zone", "b"))}, Leave, ReasonTopologyNotAllowed},
		{"a driver without topology ignores allowed topologies: race",
			node1(func(l *Local) { l.Topology = nil }),
			ClaimFacts{Claim: localClaim(nil), Class: localClass(storagev1.VolumeBindingImmediate, term(key, "node-2"))}, Race, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := ForClaim(c.local, c.facts)
			if got.Turn != c.turn || got.Reason != c.reason {
				t.Errorf("ForClaim = %s/%q, want %s/%q", got.Turn, got.Reason, c.turn, c.reason)
			}
			if got.Turn == Leave && got.Reason.Message() == "" {
				t.Errorf("reason %q has no message", got.Reason)
			}
		})
	}
}

func pvOn(terms ...v1.NodeSelectorTerm) *v1.PersistentVolume {
	pv := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv"}}
	if len(terms) > 0 {
		pv.Spec.NodeAffinity = &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{NodeSelectorTerms: terms}}
	}
	return pv
}

func requires(k, v string) v1.NodeSelectorTerm {
	return v1.NodeSelectorTerm{MatchExpressions: []v1.NodeSelectorRequirement{{Key: k, Operator: v1.NodeSelectorOpIn, Values: []string{v}}}}
}

func TestForVolumeIsOursOnlyWhereItsNodeAffinityPoints(t *testing.T) {
	cases := []struct {
		name   string
		local  Local
		pv     *v1.PersistentVolume
		ours   bool
		reason Reason
	}{
		{"made by this node's driver", node1(), pvOn(requires(key, "node-1")), true, ""},
		{"made by another node's driver", node1(), pvOn(requires(key, "node-2")), false, ReasonOtherNodesVolume},
		{"one of its terms is this node", node1(), pvOn(requires(key, "node-2"), requires(key, "node-1")), true, ""},
		{"affinity on a node label this node has", node1(), pvOn(requires("zone", "a")), true, ""},
		{"the driver's segment counts before the Node is known",
			node1(func(l *Local) { l.NodeLabels = nil }), pvOn(requires(key, "node-1")), true, ""},
		{"no node affinity: could be anywhere", node1(), pvOn(), false, ReasonNoNodeAffinity},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := ForVolume(c.local, c.pv)
			if got.Ours != c.ours || got.Reason != c.reason {
				t.Errorf("ForVolume = %+v, want ours=%v reason %q", got, c.ours, c.reason)
			}
			if !got.Ours && got.Reason.Message() == "" {
				t.Errorf("reason %q has no message", got.Reason)
			}
		})
	}
}
