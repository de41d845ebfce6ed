package provisioning

import (
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strings"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// accessibility says where the volume may live: exactly the selected node's
// segment; else the class's allowed topologies; else every segment some
// node carries. Preferred is requisite rotated by a hash of the claim UID,
// so claims spread over segments and a retry prefers the same one.
func accessibility(in RequestFacts) (*csipb.TopologyRequirement, error) {
	if len(in.TopologyKeys) == 0 {
		return nil, nil
	}
	if in.Selected != nil {
		seg, err := selectedSegment(in)
		if err != nil {
			return nil, err
		}
		if err := SelectedOutsideClass(in.Selected.Name, seg, in.Class.AllowedTopologies); err != nil {
			return nil, err
		}
		if in.SourceAt != nil && !in.SourceAt(seg) {
			// A node-local source (a volume to clone, a snapshot) is
			// copied only where it lives: the scheduler must choose again.
			return nil, Final(fmt.Errorf("the data source is not accessible from selected node %q (topology %s)", in.Selected.Name, segmentText(seg)))
		}
		t := []*csipb.Topology{{Segments: seg}}
		return &csipb.TopologyRequirement{Requisite: t, Preferred: []*csipb.Topology{{Segments: maps.Clone(seg)}}}, nil
	}
	var segs []map[string]string
	if len(in.Class.AllowedTopologies) > 0 {
		segs = allowedSegments(in.Class.AllowedTopologies)
	} else {
		segs = nodeSegments(in.Nodes, in.TopologyKeys)
	}
	if len(segs) == 0 {
		return nil, Final(fmt.Errorf("no node carries the topology keys %v of the driver", in.TopologyKeys))
	}
	if in.SourceAt != nil {
		segs = slices.DeleteFunc(segs, func(s map[string]string) bool { return !in.SourceAt(s) })
		if len(segs) == 0 {
			return nil, Final(fmt.Errorf("the data source's volume is not accessible from any topology the claim may use"))
		}
	}
	req := &csipb.TopologyRequirement{}
	for _, s := range segs {
		req.Requisite = append(req.Requisite, &csipb.Topology{Segments: s})
	}
	start := int(hashUID(string(in.Claim.UID)) % uint32(len(segs)))
	for i := range segs {
		req.Preferred = append(req.Preferred, &csipb.Topology{Segments: maps.Clone(segs[(start+i)%len(segs)])})
	}
	return req, nil
}

// SelectedOutsideClass refuses a selected node whose segment no allowed
// topology of the class covers, as the external-provisioner does: the
// claim's user can write volume.kubernetes.io/selected-node too, and the
// class's allowedTopologies are the administrator's word on where its
// volumes may live.
func SelectedOutsideClass(node string, seg map[string]string, allowed []v1.TopologySelectorTerm) error {
	if len(allowed) == 0 {
		return nil
	}
	var ids []string
	for _, a := range allowedSegments(allowed) {
		if within(seg, a) {
			return nil
		}
		ids = append(ids, segmentText(a))
	}
	return Final(fmt.Errorf("selected node %q topology %s is not in the class's allowed topologies %v", node, segmentText(seg), ids))
}

func hashUID(uid string) uint32 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(uid))
	return h.Sum32()
}

// nodeSegment is the node's labels for keys; ok is false if one is missing.
func nodeSegment(node *v1.Node, keys []string) (map[string]string, bool) {
	seg := map[string]string{}
	for _, k := range keys {
		v, ok := node.Labels[k]
		if !ok {
			return nil, false
		}
		seg[k] = v
	}
	return seg, true
}

// nodeSegments are the distinct segments of the nodes carrying every key,
// sorted so that the order does not depend on the lister's.
func nodeSegments(nodes []*v1.Node, keys []string) []map[string]string {
	byID := map[string]map[string]string{}
	for _, n := range nodes {
		if seg, ok := nodeSegment(n, keys); ok {
			byID[segmentID(seg)] = seg
		}
	}
	var out []map[string]string
	for _, id := range slices.Sorted(maps.Keys(byID)) {
		out = append(out, byID[id])
	}
	return out
}

// allowedSegments flattens each term (a key with several values means any
// of them) into segments, in the class's order, without duplicates.
func allowedSegments(terms []v1.TopologySelectorTerm) []map[string]string {
	var out []map[string]string
	seen := map[string]bool{}
	for _, term := range terms {
		segs := []map[string]string{{}}
		for _, e := range term.MatchLabelExpressions {
			var next []map[string]string
			for _, s := range segs {
				for _, v := range e.Values {
					n := maps.Clone(s)
					n[e.Key] = v
					next = append(next, n)
				}
			}
			segs = next
		}
		for _, s := range segs {
			if id := segmentID(s); len(s) > 0 && !seen[id] {
				seen[id] = true
				out = append(out, s)
			}
		}
	}
	return out
}

// segmentID is seg as "k=v," for every key in order: a key of maps and of
// sorting (segmentText is how messages show it).
func segmentID(seg map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(seg)) {
		fmt.Fprintf(&b, "%s=%s,", k, seg[k])
	}
	return b.String()
}

// segmentText is seg as messages show it: "k=v,k=v".
func segmentText(seg map[string]string) string { return strings.TrimSuffix(segmentID(seg), ",") }

// OutsideTopology says why a new volume cannot be asked of e, or nil. The
// pool falls back to the driver's first endpoint when none is in the
// requisite topology (a class's allowedTopologies naming no served node,
// or a key the driver does not report); a node-local endpoint there would
// refuse, or, ignoring topology, make the volume where the class forbids
// it, and the pin to it would later narrow the request to its node. Only a
// node-local endpoint (a node ID and a topology) is judged: a central one's
// topology says where it runs, not where its volumes may live.
func OutsideTopology(e Endpoint, req *csipb.TopologyRequirement) error {
	if e.NodeID == "" || len(e.Topology) == 0 || len(req.GetRequisite()) == 0 {
		return nil
	}
	var asked []string
	for _, t := range req.GetRequisite() {
		if within(e.Topology, t.GetSegments()) {
			return nil
		}
		asked = append(asked, segmentText(t.GetSegments()))
	}
	return fmt.Errorf("no node served by driver %s is in the topology the claim may use: %s", e.Driver, strings.Join(asked, "; "))
}

// within says whether every key of segment has the same value in topology.
func within(topology, segment map[string]string) bool {
	for k, v := range segment {
		if topology[k] != v {
			return false
		}
	}
	return len(segment) > 0
}

// PinMisfit is why an endpoint pin is not used: its endpoint is outside
// the topology the claim's request may use.
type PinMisfit struct {
	// Node is the pinned node ID, At its endpoint's segment, Allowed the
	// segments the claim's volume may live in.
	Node    string
	At      map[string]string
	Allowed []string
}

func (e *PinMisfit) Error() string {
	return fmt.Sprintf("the endpoint pin %s=%q names a node at %s, outside where the claim's volume may live (%s)",
		AnnEndpointNode, e.Node, segmentText(e.At), strings.Join(e.Allowed, "; "))
}

// PinSegments are the segments an endpoint pin may lie in: the selected
// node's, else the class's allowed topologies; nil allows any served
// endpoint. Not the node list, which changes: a pin outlives its Node
// object, and still names where the volume may be.
func PinSegments(in RequestFacts) ([]map[string]string, error) {
	switch {
	case len(in.TopologyKeys) == 0:
		return nil, nil
	case in.Selected != nil:
		seg, err := selectedSegment(in)
		if err != nil {
			return nil, err
		}
		return []map[string]string{seg}, nil
	}
	return allowedSegments(in.Class.AllowedTopologies), nil
}

// selectedSegment is the selected node's segment; a node without a label
// for every topology key is a final error.
func selectedSegment(in RequestFacts) (map[string]string, error) {
	seg, ok := nodeSegment(in.Selected, in.TopologyKeys)
	if !ok {
		return nil, Final(fmt.Errorf("selected node %q has no label for every topology key %v of the driver", in.Selected.Name, in.TopologyKeys))
	}
	return seg, nil
}

// CheckPin says why the pinned endpoint e is not one a provisioning
// attempt may have asked, nil if it may have: an attempt asks only within
// PinSegments (its request's requisite topology is within them), and
// moves the pin only within them. An endpoint without topology, or no
// segments (a driver without topology, a class that allows anywhere), say
// nothing against the pin.
func CheckPin(e Endpoint, segs []map[string]string) error {
	if len(e.Topology) == 0 || len(segs) == 0 {
		return nil
	}
	var allowed []string
	for _, seg := range segs {
		if within(e.Topology, seg) {
			return nil
		}
		allowed = append(allowed, segmentText(seg))
	}
	return &PinMisfit{Node: e.NodeID, At: e.Topology, Allowed: allowed}
}

// PinnedEndpoint is the index in eps, driver's endpoints, of the endpoint an earlier attempt
// asked (the pin, a node ID), where a volume of this claim's name may
// already exist. If it is not served now the claim waits (a retryable
// error): asking another could make a second volume. A pin outside segs
// (PinSegments) is one no attempt wrote: the error is a *PinMisfit, and
// the pin is not used.
func PinnedEndpoint(driver string, eps []Endpoint, pin string, segs []map[string]string) (int, error) {
	for i, e := range eps {
		if e.NodeID != pin {
			continue
		}
		if err := CheckPin(e, segs); err != nil {
			return -1, err
		}
		return i, nil
	}
	return -1, fmt.Errorf("an earlier attempt asked the %s endpoint of node %q, which is not served now; waiting for it", driver, pin)
}

// SelectedNodeGone is the claim's selected node name when the Node object
// is gone: the segment the driver's endpoint on it reported (node ID = node
// name), so that a claim whose node went away can still be cleaned up;
// without one it is a final error, and the scheduler must choose again.
func SelectedNodeGone(name string, eps []Endpoint) (*v1.Node, error) {
	for _, e := range eps {
		if e.NodeID == name && len(e.Topology) > 0 {
			return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: e.Topology}}, nil
		}
	}
	return nil, Final(fmt.Errorf("selected node %q does not exist", name))
}
