package doctor

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/volplane/volplane/internal/binding"
	"github.com/volplane/volplane/internal/explain"
)

// roomFixes are the steps that let the scheduler place the pods of a
// claim no node can hold by the capacity its driver publishes (explain's
// NoNodeHolds): the request of an unbound claim cannot be changed, so the
// claim is saved, asked for at most the largest room a node publishes, and
// made again; or a node gets the room. None when explain found a node
// with room.
func roomFixes(c *v1.PersistentVolumeClaim, r explain.ClaimReport) []Fix {
	if !r.NoNodeHolds {
		return nil
	}
	var out []Fix
	request := c.Spec.Resources.Requests[v1.ResourceStorage]
	if most, node := largestRoom(r.Capacity); node != "" {
		file := c.Name + ".yaml"
		out = append(out,
			Fix{Says: fmt.Sprintf("save claim %s, then in %s lower `storage: %s` to at most %s (the most a node has room for, %s) and drop `status`",
				c.Name, file, request.String(), most.String(), node),
				Command: fmt.Sprintf("volplane kubectl -n %s get pvc %s -o yaml > %s", c.Namespace, c.Name, file)},
			Fix{Says: fmt.Sprintf("make claim %s again from the edited file; its pods wait for it and the scheduler places them", c.Name),
				Risk:    "deletes the claim and creates it again (it has no volume yet, so no data)",
				Command: fmt.Sprintf("volplane kubectl -n %s replace --force -f %s", c.Namespace, file)})
	}
	return append(out, Fix{Says: fmt.Sprintf("or free space of class %s on a node, or add a node with room: once its driver publishes room for %s, the scheduler places the pods by itself",
		binding.ClaimClass(c), request.String()),
		Command: "volplane kubectl get csistoragecapacities --all-namespaces"})
}

// largestRoom is the largest room a node offers and that node (the first
// by name among equals); node is "" when no node publishes any.
func largestRoom(nodes []explain.NodeCapacity) (resource.Quantity, string) {
	var most resource.Quantity
	node := ""
	for _, n := range nodes {
		q, err := resource.ParseQuantity(n.Room())
		if n.Room() == "" || err != nil || node != "" && q.Cmp(most) <= 0 {
			continue
		}
		most, node = q, n.Node
	}
	return most, node
}
