package doctor

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// A WaitForFirstConsumer claim whose pod was put on a node directly is a
// problem, with the steps that make the scheduler place the pod.
func TestPodPlacedOnANodeDirectlyIsAProblemWithItsFix(t *testing.T) {
	w := newWorld().classes(class("fast", "fast.example.com", true)).claims(claim("data", pending(10*time.Minute))).
		pods(pod("pinned", "node-2", "data"))
	r := Check(&w.s, thresholds)
	if len(r.Findings) != 1 {
		t.Fatalf("findings %+v", r.Findings)
	}
	f := r.Findings[0]
	if f.Kind != KindClaimPending || f.Severity != SeverityProblem ||
		!strings.Contains(f.Problem, "Pod pinned was placed on node node-2 directly (spec.nodeName)") ||
		!strings.Contains(f.Problem, "nodeSelector (kubernetes.io/hostname) or node affinity instead") {
		t.Errorf("finding %+v", f)
	}
	var commands []string
	for _, fix := range f.Fixes {
		commands = append(commands, fix.Command)
	}
	want := []string{"volplane kubectl -n ns get pod pinned -o yaml > pinned.yaml",
		"volplane kubectl -n ns replace --force -f pinned.yaml", "volplane explain pvc ns/data"}
	if !slices.Equal(commands, want) {
		t.Errorf("fixes %q, want %q", commands, want)
	}
	if f.Fixes[1].Risk == "" || !strings.Contains(f.Fixes[0].Says, "nodeSelector: {kubernetes.io/hostname: node-2}") {
		t.Errorf("fixes %+v", f.Fixes)
	}
}
