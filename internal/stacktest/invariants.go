package stacktest

import (
	"context"
	"path/filepath"

	"github.com/volplane/volplane/internal/checkup"
	"github.com/volplane/volplane/internal/invariants"
)

// ReadInvariants reads what invariants.Check looks at: the cluster's
// claims, PVs and VolumeAttachments, and the volumes of every driver of
// the stack (the node-local driver of every node and the network driver).
func (s *Stack) ReadInvariants(ctx context.Context) (invariants.State, error) {
	return checkup.ReadInvariants(ctx, s.CP.Client, s.Drivers.Endpoints)
}

// VolumeDir is the directory of a mount volume of the stack's drivers on
// disk: a node-local one's on node, or (node "") a network one's.
func (s *Stack) VolumeDir(node, handle string) string {
	if node == "" {
		return filepath.Join(s.cfg.DataDir, "network", "volumes", handle)
	}
	return filepath.Join(s.cfg.DataDir, "hostpath", node, "volumes", handle)
}
