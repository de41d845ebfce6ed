package stacktest

import (
	"path/filepath"

	"github.com/volplane/volplane/internal/hostpath"
	"github.com/volplane/volplane/internal/invariants"
)

// InvariantEndpoints are the stack's drivers as invariants.Read reads
// them: the node-local driver of every node and the network driver.
func (s *Stack) InvariantEndpoints() []invariants.Endpoint {
	sock := func(name string) string { return "unix://" + filepath.Join(s.cfg.DataDir, "csi", name) }
	var out []invariants.Endpoint
	for _, node := range s.CP.Nodes {
		out = append(out, invariants.Endpoint{Driver: hostpath.DriverName, Node: node, TopologyKey: hostpath.TopologyKey, CSI: sock(node + ".sock")})
	}
	return append(out, invariants.Endpoint{Driver: hostpath.NetworkDriverName, CSI: sock("network.sock"), Attaches: true})
}

// VolumeDir is the directory of a mount volume of the stack's drivers on
// disk: a node-local one's on node, or (node "") a network one's.
func (s *Stack) VolumeDir(node, handle string) string {
	if node == "" {
		return filepath.Join(s.cfg.DataDir, "network", "volumes", handle)
	}
	return filepath.Join(s.cfg.DataDir, "hostpath", node, "volumes", handle)
}
