package doctor

import (
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/volplane/volplane/internal/explain"
)

// placedFixes are the steps that free a WaitForFirstConsumer claim whose
// pods were put on a node directly (explain's PlacedDirectly): spec.nodeName
// cannot be changed, so each pod is saved, given a nodeSelector for its
// node instead, and made again; the scheduler then selects the node and
// the claim is provisioned there.
func placedFixes(c *v1.PersistentVolumeClaim, r explain.ClaimReport) []Fix {
	var out []Fix
	for _, p := range r.PlacedDirectly {
		file := p.Pod + ".yaml"
		out = append(out,
			Fix{Says: fmt.Sprintf("save pod %s, then in %s replace `nodeName: %s` by `nodeSelector: {kubernetes.io/hostname: %s}` and drop `status`",
				p.Pod, file, p.Node, p.Node),
				Command: fmt.Sprintf("volplane kubectl -n %s get pod %s -o yaml > %s", c.Namespace, p.Pod, file)},
			Fix{Says: fmt.Sprintf("make pod %s again from the edited file, for the scheduler to place", p.Pod),
				Risk:    "deletes the running pod and creates it again",
				Command: fmt.Sprintf("volplane kubectl -n %s replace --force -f %s", c.Namespace, file)})
	}
	return out
}
