package explain

import (
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/volplane/volplane/internal/protection"
)

// PlacedPod is a pod that uses a WaitForFirstConsumer claim and was put on
// a node directly (spec.nodeName set by its author), so the scheduler
// never saw it.
type PlacedPod struct {
	Pod  string `json:"pod"`
	Node string `json:"node"`
}

// placedDirectly are the pods that reference the unbound claim of a
// WaitForFirstConsumer class, have not terminated, and run on a node
// although no node was selected for the claim. The scheduler selects the
// claim's node (the annotation volume.kubernetes.io/selected-node) before
// it binds a pod, so a pod on a node with no node selected was placed
// there by its author: the scheduler never sees it, never selects a node,
// and the claim is never provisioned. A pod whose ephemeral volume names a
// claim it does not own does not count (protection.PodReferences).
func placedDirectly(claim *v1.PersistentVolumeClaim, pods []*v1.Pod) []PlacedPod {
	var out []PlacedPod
	for _, p := range pods {
		if p.Spec.NodeName != "" && protection.PodReferences(p, claim) {
			out = append(out, PlacedPod{Pod: p.Name, Node: p.Spec.NodeName})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Pod < out[j].Pod })
	return out
}

// placedSummary is the claim's summary when pods were placed directly: it
// names them, says why that never provisions, and what to do instead.
func placedSummary(placed []PlacedPod) string {
	var pods []string
	for _, p := range placed {
		pods = append(pods, fmt.Sprintf("pod %s was placed on node %s", p.Pod, p.Node))
	}
	return Sentence(strings.Join(pods, " and ") + " directly (spec.nodeName), so the scheduler never sees it and" +
		" never selects a node for the claim, whose class binds on the first consumer: the claim is never provisioned." +
		" Create the pod without spec.nodeName and with a nodeSelector (kubernetes.io/hostname) or node affinity instead")
}

// String is the pod and its node, for the table.
func (p PlacedPod) String() string {
	return fmt.Sprintf("pod %s on node %s by spec.nodeName: the scheduler never saw it", p.Pod, p.Node)
}
