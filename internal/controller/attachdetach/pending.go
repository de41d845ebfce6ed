package attachdetach

import (
	"maps"
	"slices"

	v1 "k8s.io/api/core/v1"

	"github.com/volplane/volplane/internal/attachment"
)

// pending is what a node's next sync decides on: the volumes the events
// since its last sync named, or, when all is set, every volume of the
// node (attachment.Facts.Scope). A pod event names the pod's volumes, a
// claim's or PV's the volume it is bound to or is, an attachment's its
// volume, a node status change the volumes whose entries changed; the
// node's own changes (Ready, the managed annotation, the out-of-service
// taint), the resync, CSIDriver changes, in-tree and inline volumes, and
// anything whose volume cannot be named from the caches ask for all.
type pending struct {
	all     bool
	volumes map[v1.UniqueVolumeName]bool
}

// wake queues the node for a sync of the volumes; an empty or in-tree
// name asks for the whole node.
func (c *Controller) wake(node string, volumes ...v1.UniqueVolumeName) {
	if node == "" || len(volumes) == 0 {
		return
	}
	c.note(node, volumes)
	c.q.Add(node)
}

// wakeAll queues the node for a sync of all its volumes.
func (c *Controller) wakeAll(node string) {
	if node == "" {
		return
	}
	c.note(node, nil)
	c.q.Add(node)
}

// note adds the volumes to the node's pending record; nil is all of them.
func (c *Controller) note(node string, volumes []v1.UniqueVolumeName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.pending[node]
	if p == nil {
		p = &pending{volumes: map[v1.UniqueVolumeName]bool{}}
		c.pending[node] = p
	}
	if volumes == nil || slices.ContainsFunc(volumes, wholeNode) {
		p.all, p.volumes = true, nil
	}
	if p.all {
		return
	}
	for _, u := range volumes {
		p.volumes[u] = true
	}
}

// wholeNode: a volume that is decided on with the whole node (in-tree), or
// none named.
func wholeNode(u v1.UniqueVolumeName) bool { return u == "" || attachment.InTreePlugin(u) != "" }

// take hands the node's pending record to its sync and forgets it: due is
// false when nothing is pending (a requeue whose work an earlier sync
// already took), scope is nil for the whole node.
func (c *Controller) take(node string) (scope map[v1.UniqueVolumeName]bool, due bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p, due := c.pending[node]
	delete(c.pending, node)
	if !due || p.all {
		return nil, due
	}
	return p.volumes, true
}

// giveBack returns a failed sync's work (its scope; nil: all) to the
// node's next sync, which the runner's retry starts.
func (c *Controller) giveBack(node string, scope map[v1.UniqueVolumeName]bool) {
	if scope == nil {
		c.note(node, nil)
		return
	}
	c.note(node, slices.Collect(maps.Keys(scope)))
}
