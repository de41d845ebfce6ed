package hostpath

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/container-storage-interface/spec/lib/go/csi"
)

// Network mode: the rules that only matter once a volume can be attached to
// more than one node.

// attachConflict says why vol cannot be attached to node as want, or "".
// The CSI spec's rule: a volume attached to one node with a single-node
// access mode is refused to every other ("Volume published to another
// node"), and so is a single-node attachment of a volume attached elsewhere;
// with MULTI_NODE_SINGLE_WRITER, one node at most may write. A node-local
// volume is only ever attached to its own node, so it never conflicts.
func attachConflict(vol *volume, node string, want attachment) string {
	for _, other := range slices.Sorted(maps.Keys(vol.Attachments)) {
		if other == node {
			continue
		}
		have := vol.Attachments[other]
		switch {
		case isSingleNodeMode(modeOf(want.Mode)):
			return fmt.Sprintf("Volume published to another node: volume %s is attached to node %s, and access mode %s allows one node",
				vol.ID, other, want.Mode)
		case isSingleNodeMode(modeOf(have.Mode)):
			return fmt.Sprintf("Volume published to another node: volume %s is attached to node %s with access mode %s, which allows one node",
				vol.ID, other, have.Mode)
		case !want.ReadOnly && !have.ReadOnly && (isSingleWriter(want.Mode) || isSingleWriter(have.Mode)):
			return fmt.Sprintf("Volume published to another node: volume %s is attached for writing to node %s, and access mode %s allows one writer",
				vol.ID, other, csi.VolumeCapability_AccessMode_MULTI_NODE_SINGLE_WRITER)
		}
	}
	return ""
}

// modeOf reads a recorded access mode; "" (a version 1 state, where every
// volume was node-local) counts as single-node.
func modeOf(recorded string) csi.VolumeCapability_AccessMode_Mode {
	if recorded == "" {
		return csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER
	}
	return csi.VolumeCapability_AccessMode_Mode(csi.VolumeCapability_AccessMode_Mode_value[recorded])
}

func isSingleWriter(recorded string) bool {
	return modeOf(recorded) == csi.VolumeCapability_AccessMode_MULTI_NODE_SINGLE_WRITER
}

// nodeList names the nodes served, sorted, for a message.
func nodeList(nodes map[string]string) string {
	return strings.Join(slices.Sorted(maps.Keys(nodes)), ", ")
}
