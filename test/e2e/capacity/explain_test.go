package capacity

import (
	"bytes"
	"io"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/volplane/volplane/internal/checkup"
	"github.com/volplane/volplane/internal/doctor"
	"github.com/volplane/volplane/internal/explain"
	"github.com/volplane/volplane/internal/inspect"
	"github.com/volplane/volplane/internal/stacktest"
	"github.com/volplane/volplane/test/e2e/support"
)

// A claim larger than any node's capacity: the scheduler places its pod
// nowhere, no driver is asked, and explain says that no node can hold it,
// node by node, instead of "waiting for the pod to be scheduled".
func TestExplainSaysNoNodeCanHoldAHugeClaim(t *testing.T) {
	ctx := t.Context()
	stacktest.Eventually(t, "every node's capacity published", published(ctx, waitClass, everyNode(nodeCapacity)), alive)
	w := newWorkload(t)
	c, err := bed.cp.Client.CoreV1().PersistentVolumeClaims(w.ns).Create(ctx, support.Claim(w.ns, "huge", waitClass, "5Gi"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bed.cp.Client.CoreV1().Pods(w.ns).Create(ctx, support.Pod(w.ns, "huge-pod", "", "huge"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	stacktest.Eventually(t, "the pod fits no node", w.unschedulable("huge-pod", "did not have enough free storage"), alive)
	rep, err := inspect.Report(ctx, bed.cp.Client, "pvc", w.ns+"/huge", "")
	if err != nil {
		t.Fatal(err)
	}
	r := rep.(explain.ClaimReport)
	if !strings.HasPrefix(r.Summary, "No node can hold this claim's 5Gi of class "+waitClass) {
		t.Errorf("summary = %q", r.Summary)
	}
	for _, n := range bed.cp.Nodes {
		if !strings.Contains(r.Summary, n+" has 2Gi") {
			t.Errorf("summary %q does not name %s's 2Gi", r.Summary, n)
		}
	}
	if len(r.Capacity) != len(bed.cp.Nodes) {
		t.Errorf("capacity rows = %+v, want one per node", r.Capacity)
	}
	for _, n := range r.Capacity {
		if n.Fit != explain.NodeTooSmall || n.Capacity != "2Gi" {
			t.Errorf("node %+v, want too small at 2Gi", n)
		}
	}
	var out bytes.Buffer
	if err := rep.Table(&out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "Capacity:") {
		t.Errorf("table:\n%s", out.String())
	}
	if got := bed.calls.createsOf(string(c.UID)); len(got) != 0 {
		t.Errorf("a driver was asked for the huge claim: %v", got)
	}
	// doctor decides from the same facts (explain.NoNodeHolds): a problem,
	// with the fixes to ask for at most what a node has, or to make room.
	dr, err := checkup.Doctor(ctx, bed.cp.Client, checkup.DoctorConfig{Output: "json"}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	var found *doctor.Finding
	for i, f := range dr.Findings {
		if f.Object.Kind == doctor.ObjectClaim && f.Object.Namespace == w.ns && f.Object.Name == "huge" {
			found = &dr.Findings[i]
		}
	}
	if found == nil {
		t.Fatalf("doctor has no finding about claim huge: %+v", dr.Findings)
	}
	var commands []string
	for _, fix := range found.Fixes {
		commands = append(commands, fix.Command)
	}
	want := []string{"volplane kubectl -n " + w.ns + " get pvc huge -o yaml > huge.yaml",
		"volplane kubectl -n " + w.ns + " replace --force -f huge.yaml",
		"volplane kubectl get csistoragecapacities --all-namespaces"}
	if found.Kind != doctor.KindClaimPending || found.Severity != doctor.SeverityProblem ||
		!strings.Contains(found.Problem, "No node can hold this claim's 5Gi") || len(commands) < len(want) ||
		!slices.Equal(commands[:len(want)], want) || !strings.Contains(found.Fixes[0].Says, "to at most 2Gi") {
		t.Errorf("doctor finding %+v, want a problem whose fixes run %q and ask for at most 2Gi", *found, want)
	}
}
