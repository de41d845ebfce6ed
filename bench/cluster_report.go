package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ClusterProcess is one measured process: its CPU seconds over the run
// and its peak RSS.
type ClusterProcess struct {
	Name       string  `json:"name"`
	CPUSeconds float64 `json:"cpu_seconds"`
	PeakRSS    int64   `json:"peak_rss_bytes"`
}

// ClusterReport is what one run measured.
type ClusterReport struct {
	Nodes     int `json:"nodes"`
	Claims    int `json:"claims"`
	Pods      int `json:"pods"`
	Recreated int `json:"recreated"`
	// StartSeconds: from `up` started until it said it is up.
	StartSeconds float64 `json:"start_seconds"`
	// RegisteredSeconds: from `up` started until every node's CSINode
	// lists both bundled drivers (`up` says it is up before its nodes
	// registered them; a pod on a node not registered yet waits).
	RegisteredSeconds float64 `json:"registered_seconds"`
	// ClaimsBoundSeconds: from the first claim's create until all are
	// Bound.
	ClaimsBoundSeconds float64 `json:"claims_bound_seconds"`
	// RunningSeconds: from the first pod's create until all run.
	RunningSeconds float64 `json:"running_seconds"`
	// RecreateSeconds: from the first delete until the recreated pods run
	// and every deleted claim's PV is gone.
	RecreateSeconds float64 `json:"recreate_seconds"`
	// WritesPerPod are the API writes (every resource but Leases and
	// Events: the nodes' heartbeats and the loops' events are counted
	// apart) from the first pod's create until all run, per pod; WritesBy
	// breaks them down by "resource[/subresource] VERB".
	WritesPerPod float64          `json:"writes_per_pod"`
	WritesBy     map[string]int64 `json:"writes_by"`
	// Processes: `up` (control plane, drivers, node agent and loops in
	// one) and this bench process (the workload's client).
	Processes []ClusterProcess `json:"processes"`
	// WallSeconds from `up`'s start to the end of the checks; IdleCores is
	// the machine's cores less what the processes used over it: the CPU
	// left for more loops.
	WallSeconds float64 `json:"wall_seconds"`
	Cores       int     `json:"cores"`
	IdleCores   float64 `json:"idle_cores"`
	// Violations are the invariant checker's findings at the end.
	Violations []string `json:"violations"`
}

// WriteText prints the report.
func (r *ClusterReport) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "cluster: %d nodes, %d claims, %d pods (%d deleted with their claims and recreated)\n", r.Nodes, r.Claims, r.Pods, r.Recreated)
	fmt.Fprintf(&b, "  start (up)                  %8.1f s\n", r.StartSeconds)
	fmt.Fprintf(&b, "  every CSINode registered    %8.1f s (from up's start)\n", r.RegisteredSeconds)
	fmt.Fprintf(&b, "  all claims Bound            %8.1f s\n", r.ClaimsBoundSeconds)
	fmt.Fprintf(&b, "  all pods Running            %8.1f s\n", r.RunningSeconds)
	fmt.Fprintf(&b, "  recreated Running, reclaimed %7.1f s\n", r.RecreateSeconds)
	fmt.Fprintf(&b, "  API writes per pod          %8.2f (leases and events apart)\n", r.WritesPerPod)
	keys := slices.Sorted(maps.Keys(r.WritesBy))
	for _, k := range keys {
		fmt.Fprintf(&b, "      %-40s %d\n", k, r.WritesBy[k])
	}
	for _, p := range r.Processes {
		fmt.Fprintf(&b, "  %-10s CPU %8.1f s (%.2f cores), peak RSS %6.0f MiB\n", p.Name, p.CPUSeconds,
			p.CPUSeconds/max(r.WallSeconds, 1e-9), float64(p.PeakRSS)/(1<<20))
	}
	fmt.Fprintf(&b, "  wall %.1f s on %d cores: %.2f cores left idle\n", r.WallSeconds, r.Cores, r.IdleCores)
	if len(r.Violations) == 0 {
		b.WriteString("  invariants: clean\n")
	} else {
		fmt.Fprintf(&b, "  invariants: %d broken\n", len(r.Violations))
		for _, v := range r.Violations {
			fmt.Fprintf(&b, "    %s\n", v)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteClusterFiles writes the report as JSON into dir.
func WriteClusterFiles(r *ClusterReport, dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	raw, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, ClusterReportJSON), raw, 0o644)
}
