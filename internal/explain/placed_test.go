package explain_test

import (
	"bytes"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	storagehelpers "k8s.io/component-helpers/storage/volume"

	"github.com/volplane/volplane/internal/explain"
)

// A WaitForFirstConsumer claim whose only pod was put on a node directly
// (spec.nodeName) is never provisioned: the report names the pod and its
// node, says why, and what to do instead. Pods waiting for the scheduler,
// finished pods, pods of another namespace and a selected node keep the
// other summaries.
func TestPodPlacedOnANodeDirectlyIsNamedWithTheFix(t *testing.T) {
	f := facts()
	f.Pods = []*v1.Pod{newPod("pinned", "node-2", "data")}
	r := explain.Claim(newClaim("data", "1Gi", claimClass("late")), f)
	want := "Pod pinned was placed on node node-2 directly (spec.nodeName), so the scheduler never sees it and never selects" +
		" a node for the claim, whose class binds on the first consumer: the claim is never provisioned. Create the pod" +
		" without spec.nodeName and with a nodeSelector (kubernetes.io/hostname) or node affinity instead."
	if r.Summary != want {
		t.Errorf("summary %q\nwant    %q", r.Summary, want)
	}
	if len(r.PlacedDirectly) != 1 || r.PlacedDirectly[0] != (explain.PlacedPod{Pod: "pinned", Node: "node-2"}) {
		t.Errorf("placed %+v", r.PlacedDirectly)
	}
	var out bytes.Buffer
	if err := r.Table(&out); err != nil || !strings.Contains(out.String(), "pod pinned on node node-2 by spec.nodeName") {
		t.Errorf("table %v:\n%s", err, out.String())
	}

	finished := newPod("done", "node-2", "data")
	finished.Status.Phase = v1.PodSucceeded
	elsewhere := newPod("other", "node-2", "data")
	elsewhere.Namespace = "elsewhere"
	cases := map[string]struct {
		pods  []*v1.Pod
		claim *v1.PersistentVolumeClaim
	}{
		"a pod waits for the scheduler":  {[]*v1.Pod{newPod("pinned", "node-2", "data"), newPod("web", "", "data")}, newClaim("data", "1Gi", claimClass("late"))},
		"the pod finished":               {[]*v1.Pod{finished}, newClaim("data", "1Gi", claimClass("late"))},
		"a pod of another namespace":     {[]*v1.Pod{elsewhere}, newClaim("data", "1Gi", claimClass("late"))},
		"a node is selected":             {[]*v1.Pod{newPod("pinned", "node-2", "data")}, newClaim("data", "1Gi", claimClass("late"), claimAnn(storagehelpers.AnnSelectedNode, "node-2"))},
		"the class binds at once (fast)": {[]*v1.Pod{newPod("pinned", "node-2", "data")}, newClaim("data", "1Gi", claimClass("fast"))},
	}
	for name, tc := range cases {
		f := facts()
		f.Pods = tc.pods
		if r := explain.Claim(tc.claim, f); strings.Contains(r.Summary, "directly") {
			t.Errorf("%s: summary %q", name, r.Summary)
		}
	}
}
