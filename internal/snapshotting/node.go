package snapshotting

import (
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"

	"github.com/volplane/volplane/internal/snapshotapi"
)

// Serving says whether a node deployment serves a content.
type Serving int

const (
	// ServeYes: the content is this process's.
	ServeYes Serving = iota
	// ServeNo: another node's sidecar serves it.
	ServeNo
	// ServeIfLocal: no label says; the content is this node's if its
	// snapshot (or, before one is taken, its source volume) is on this
	// node's driver, which only the loop can find out.
	ServeIfLocal
)

// ServedBy says whether the sidecar of node serves content c; node "" is
// the central deployment, which serves every content of its drivers. As
// the reference's distributed snapshotting, a content labelled
// snapshotapi.ManagedByLabel belongs to the node it names.
func ServedBy(c *snapv1.VolumeSnapshotContent, node string) Serving {
	if node == "" {
		return ServeYes
	}
	if owner, ok := c.Labels[snapshotapi.ManagedByLabel]; ok {
		if owner == node {
			return ServeYes
		}
		return ServeNo
	}
	return ServeIfLocal
}
