package provisioning

import (
	"fmt"
	"maps"
	"slices"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	volumehelpers "k8s.io/component-helpers/storage/volume"
)

// Local is a node-deployment provisioner's node, as far as one driver is
// concerned.
type Local struct {
	// Node is the Kubernetes node the provisioner runs on (--node-name).
	Node string
	// NodeID is the node ID the node's driver reported (NodeGetInfo):
	// what the provisioner pins an in-progress claim to.
	NodeID string
	// Topology is the segment the node's driver reported; empty for a
	// driver without topology.
	Topology map[string]string
	// NodeLabels are the labels of the Node object; nil if it is not
	// known (yet).
	NodeLabels map[string]string
	// ImmediateBinding says whether this node races for claims of
	// Immediate classes (--node-deployment-immediate-binding).
	ImmediateBinding bool
}

// Turn says what a node does with a claim.
type Turn int

const (
	// Leave: not this node's claim (the verdict says why).
	Leave Turn = iota
	// Handle: this node's claim: provision it (or finish or clean up
	// what this node started).
	Handle
	// Race: nobody's claim yet, and this node can serve it: try to become
	// its owner by selecting this node.
	Race
)

func (t Turn) String() string { return [...]string{"leave", "handle", "race"}[t] }

// Reason says why a node leaves a claim or a PV. The set is closed; logs
// and tests use these.
type Reason string

const (
	// ReasonPinnedElsewhere: an earlier attempt asked another node's
	// driver, where a volume may exist; only that node may go on.
	ReasonPinnedElsewhere Reason = "PinnedElsewhere"
	// ReasonOtherNode: the claim's selected node is another node.
	ReasonOtherNode Reason = "OtherNode"
	// ReasonNoClass: the claim's class is not known, so its binding mode
	// is not either.
	ReasonNoClass Reason = "NoClass"
	// ReasonWaitsForScheduler: a WaitForFirstConsumer claim without a
	// selected node; the scheduler chooses, not the provisioners.
	ReasonWaitsForScheduler Reason = "WaitsForScheduler"
	// ReasonImmediateOff: an Immediate claim, and this node does not race
	// for them.
	ReasonImmediateOff Reason = "ImmediateBindingOff"
	// ReasonNodeUnknown: the Node object is not known (yet).
	ReasonNodeUnknown Reason = "NodeUnknown"
	// ReasonNodeLacksTopology: the Node lacks a label of the driver's
	// segment, so a volume made here could not be used on it.
	ReasonNodeLacksTopology Reason = "NodeLacksTopology"
	// ReasonTopologyNotAllowed: the class's allowedTopologies exclude
	// this node's segment.
	ReasonTopologyNotAllowed Reason = "TopologyNotAllowed"
	// ReasonNoNodeAffinity: a PV without node affinity could be on any
	// node; a node-local provisioner deletes only what is provably its.
	ReasonNoNodeAffinity Reason = "NoNodeAffinity"
	// ReasonOtherNodesVolume: the PV's node affinity excludes this node.
	ReasonOtherNodesVolume Reason = "OtherNodesVolume"
)

var reasonMessages = map[Reason]string{
	ReasonPinnedElsewhere:    "an earlier attempt asked the driver of another node, where the volume may exist",
	ReasonOtherNode:          "the claim is assigned to another node",
	ReasonNoClass:            "the claim's class is not known",
	ReasonWaitsForScheduler:  "the claim waits for the scheduler to select a node",
	ReasonImmediateOff:       "immediate binding is off on this node",
	ReasonNodeUnknown:        "this node's Node object is not known",
	ReasonNodeLacksTopology:  "this node lacks a label of its driver's topology segment",
	ReasonTopologyNotAllowed: "the class's allowed topologies exclude this node",
	ReasonNoNodeAffinity:     "the PV has no node affinity, so nothing tells it was provisioned on this node",
	ReasonOtherNodesVolume:   "the PV was not provisioned on this node",
}

// Message is the reason in words.
func (r Reason) Message() string { return reasonMessages[r] }

// ClaimFacts is what the provisioner's sync read about a claim, for
// DecideClaim and, in node deployment, ForClaim.
type ClaimFacts struct {
	Claim *v1.PersistentVolumeClaim
	// Class is the claim's class; nil if it does not exist (or is not
	// known yet).
	Class *storagev1.StorageClass
	// Pin is the node ID of the driver an earlier attempt asked ("" for
	// none): the claim's AnnEndpointNode.
	Pin string
	// PVExists: a PV named pvc-<claim UID> exists (the lister's, or one
	// this process made that the lister does not show yet).
	PVExists bool
	// Serves says whether the provisioner serves a driver name.
	Serves func(driver string) bool
}

// ClaimVerdict is ForClaim's answer; Reason is set for Leave.
type ClaimVerdict struct {
	Turn   Turn
	Reason Reason
	// Detail names what the reason is about (the other node, the pin).
	Detail string
}

func (v ClaimVerdict) String() string {
	if v.Turn != Leave {
		return v.Turn.String()
	}
	if v.Detail == "" {
		return v.Reason.Message()
	}
	return fmt.Sprintf("%s (%s)", v.Reason.Message(), v.Detail)
}

func leave(r Reason, detail string) ClaimVerdict {
	return ClaimVerdict{Turn: Leave, Reason: r, Detail: detail}
}

// ForClaim decides whose claim it is. A pin decides first: only the node
// whose driver an earlier attempt asked may go on (a volume may exist
// there). The pin is on a user-writable claim: the node it names checks it
// against the selected node and the class's allowed topologies before use
// (CheckPin) and removes one that does not fit, which hands the claim to
// the selected node here. Then the selected node (an in-progress claim
// without a pin was started by a driver without node ID, on the node
// selected). An unassigned claim is raced for only if it is Immediate,
// immediate binding is on, and this node can serve it: its Node carries
// the driver's segment and the class allows it.
func ForClaim(l Local, f ClaimFacts) ClaimVerdict {
	selected := f.Claim.Annotations[volumehelpers.AnnSelectedNode]
	switch {
	case f.Pin != "" && f.Pin == l.NodeID:
		return ClaimVerdict{Turn: Handle}
	case f.Pin != "":
		return leave(ReasonPinnedElsewhere, "pinned to "+f.Pin)
	case selected == l.Node:
		return ClaimVerdict{Turn: Handle}
	case selected != "":
		return leave(ReasonOtherNode, selected)
	case f.Class == nil:
		return leave(ReasonNoClass, "")
	case waits(f.Class):
		return leave(ReasonWaitsForScheduler, "")
	case !l.ImmediateBinding:
		return leave(ReasonImmediateOff, "")
	}
	if r, detail := l.cannotServe(f.Class); r != "" {
		return leave(r, detail)
	}
	return ClaimVerdict{Turn: Race}
}

func waits(class *storagev1.StorageClass) bool {
	return class.VolumeBindingMode != nil && *class.VolumeBindingMode == storagev1.VolumeBindingWaitForFirstConsumer
}

// cannotServe says why this node cannot take a claim of class, "" if it
// can.
func (l Local) cannotServe(class *storagev1.StorageClass) (Reason, string) {
	if l.NodeLabels == nil {
		return ReasonNodeUnknown, l.Node
	}
	for k, v := range l.Topology {
		if l.NodeLabels[k] != v {
			return ReasonNodeLacksTopology, k + "=" + v
		}
	}
	if len(class.AllowedTopologies) == 0 || len(l.Topology) == 0 {
		return "", ""
	}
	if !allows(class.AllowedTopologies, l.labels()) {
		return ReasonTopologyNotAllowed, class.Name
	}
	return "", ""
}

// allows: some term has every expression met by labels (the terms are
// ORed, the expressions of a term ANDed, the values of one ORed).
func allows(terms []v1.TopologySelectorTerm, labels map[string]string) bool {
	for _, t := range terms {
		met := true
		for _, e := range t.MatchLabelExpressions {
			v, ok := labels[e.Key]
			met = met && ok && slices.Contains(e.Values, v)
		}
		if met {
			return true
		}
	}
	return false
}

// labels are the node's labels with the driver's segment over them: what
// a volume made by this node's driver is accessible from.
func (l Local) labels() map[string]string {
	out := maps.Clone(l.NodeLabels)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, l.Topology)
	return out
}

// VolumeVerdict is ForVolume's answer: Ours, or the reason not.
type VolumeVerdict struct {
	Ours   bool
	Reason Reason
}

// ForVolume says whether pv's volume is held by this node's driver: only
// then may this node delete (or expand) it. The PV's node affinity must be
// met by this node (its labels and its driver's segment); a PV without one
// could be anywhere and is left to an operator, as a node-local driver
// always records where its volumes are.
func ForVolume(l Local, pv *v1.PersistentVolume) VolumeVerdict {
	a := pv.Spec.NodeAffinity
	if a == nil || a.Required == nil || len(a.Required.NodeSelectorTerms) == 0 {
		return VolumeVerdict{Reason: ReasonNoNodeAffinity}
	}
	if volumehelpers.CheckNodeAffinity(pv, l.labels()) != nil {
		return VolumeVerdict{Reason: ReasonOtherNodesVolume}
	}
	return VolumeVerdict{Ours: true}
}
