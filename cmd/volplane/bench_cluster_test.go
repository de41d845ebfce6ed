package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/volplane/volplane/bench"
)

// volplane bench --scenario cluster at CI size: up with 100 simulated
// nodes, 300 claims Bound, 100 pods Running, half of them deleted with
// their claims and recreated until all run again and every deleted volume
// is reclaimed, and the invariant checker clean at the end.
func TestBenchCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts volplane up with 100 nodes")
	}
	dir := t.TempDir()
	var stderr strings.Builder
	cmd := volplane(t, "bench", "--scenario", "cluster", "--nodes", "100", "--pairs", "300", "--pods", "100", "--timeout", "5m", "-o", dir)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("volplane bench --scenario cluster: %v\n%s\n%s", err, out, tail(stderr.String(), 4000))
	}
	raw, err := os.ReadFile(filepath.Join(dir, bench.ClusterReportJSON))
	if err != nil {
		t.Fatal(err)
	}
	var r bench.ClusterReport
	if err := json.Unmarshal(raw, &r); err != nil {
		t.Fatalf("%s: %v", bench.ClusterReportJSON, err)
	}
	t.Logf("\n%s", out)
	if r.Nodes != 100 || r.Claims != 300 || r.Pods != 100 || r.Recreated != 50 {
		t.Errorf("ran %d nodes, %d claims, %d pods, %d recreated; want 100, 300, 100, 50", r.Nodes, r.Claims, r.Pods, r.Recreated)
	}
	if len(r.Violations) > 0 {
		t.Errorf("invariants broken at the end:\n%s", strings.Join(r.Violations, "\n"))
	}
	if r.StartSeconds <= 0 || r.RegisteredSeconds < r.StartSeconds || r.ClaimsBoundSeconds <= 0 || r.RunningSeconds <= 0 || r.RecreateSeconds <= 0 {
		t.Errorf("a phase without a time: %+v", r)
	}
	if r.WritesBy["pods POST"] != 100 || r.WritesBy["volumeattachments POST"] < 100 {
		t.Errorf("writes while the pods started %v, want 100 pod creates and an attachment per pod", r.WritesBy)
	}
	if len(r.Processes) != 2 || r.Processes[0].PeakRSS <= 0 || r.Processes[0].CPUSeconds <= 0 {
		t.Errorf("processes %+v, want up and bench measured", r.Processes)
	}
}

// tail is the end of s, at most n bytes.
func tail(s string, n int) string { return s[max(0, len(s)-n):] }
