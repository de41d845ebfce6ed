package explain

import (
	"fmt"

	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/internal/bundle"
	"github.com/volplane/volplane/internal/explain"
	"github.com/volplane/volplane/internal/inspect"
	"github.com/volplane/volplane/test/e2e/support"
)

// The case, as a new user meets it on `up --nodes 2`: a pod with
// spec.nodeName: node-2 using a WaitForFirstConsumer claim waits forever,
// since the scheduler never sees it. explain names the pod, says it was
// placed on its node directly and why that never provisions, and what to
// do instead.
func TestExplainNamesAPodPlacedOnANodeDirectly(t *testing.T) {
	e := newEnv(t)
	node := stack.CP.Nodes[1]
	e.claim("data", "1Gi", bundle.WaitClass)
	pinned := support.Pod(e.ns, "pinned", "", "data")
	pinned.Spec.NodeName = node // as the user wrote it
	if _, err := e.client.CoreV1().Pods(e.ns).Create(e.ctx, pinned, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually("explain names pod pinned", func() string {
		report, err := inspect.Report(e.ctx, e.client, "pvc", "data", e.ns)
		if err != nil {
			return err.Error()
		}
		r := report.(explain.ClaimReport)
		if len(r.PlacedDirectly) != 1 || r.PlacedDirectly[0] != (explain.PlacedPod{Pod: "pinned", Node: node}) {
			return fmt.Sprintf("placed directly %+v, want pod pinned on %s; summary %q", r.PlacedDirectly, node, r.Summary)
		}
		return ""
	})
	e.check("placed-on-node", "pvc", "data")
}
