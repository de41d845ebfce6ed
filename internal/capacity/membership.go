package capacity

import (
	"maps"
	"slices"
)

// Membership is the segment each node puts each driver on (NodeSegment),
// kept one node at a time as Nodes and CSINodes change, so that a change of
// one node costs the segments it leaves and joins rather than a pass over
// every node. Its Segments are those Segments derives from the same Nodes
// and CSINodes. The zero value is empty and ready; it is not safe for
// concurrent use.
type Membership struct {
	// on is driver → node → the key of the node's segment.
	on map[string]map[string]string
	// held is driver → segment key → the segment and its node count.
	held map[string]map[string]*heldSegment
}

type heldSegment struct {
	segment Segment
	nodes   int
}

// Set records the segment node puts driver on (ok false: none), and
// returns the keys of the segments that appeared or went away by it (a
// node moving between segments that others still hold changes none).
func (m *Membership) Set(driver, node string, seg Segment, ok bool) (changed []string) {
	if m.on == nil {
		m.on, m.held = map[string]map[string]string{}, map[string]map[string]*heldSegment{}
	}
	if m.on[driver] == nil {
		m.on[driver], m.held[driver] = map[string]string{}, map[string]*heldSegment{}
	}
	on, held := m.on[driver], m.held[driver]
	oldKey, had := on[node]
	newKey := seg.Key()
	if had && ok && oldKey == newKey {
		return nil
	}
	if had {
		delete(on, node)
		h := held[oldKey]
		if h.nodes--; h.nodes == 0 {
			delete(held, oldKey)
			changed = append(changed, oldKey)
		}
	}
	if ok {
		on[node] = newKey
		h := held[newKey]
		if h == nil {
			h = &heldSegment{segment: slices.Clone(seg)}
			held[newKey] = h
			changed = append(changed, newKey)
		}
		h.nodes++
	}
	return changed
}

// Segment is driver's segment of key, if a node holds it.
func (m *Membership) Segment(driver, key string) (Segment, bool) {
	h := m.held[driver][key]
	if h == nil {
		return nil, false
	}
	return h.segment, true
}

// Segments are driver's segments, sorted by Key (as Segments returns
// them).
func (m *Membership) Segments(driver string) []Segment {
	held := m.held[driver]
	out := make([]Segment, 0, len(held))
	for _, k := range slices.Sorted(maps.Keys(held)) {
		out = append(out, held[k].segment)
	}
	return out
}
