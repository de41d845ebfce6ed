package manager

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/volplane/volplane/internal/nodeagent"
)

// The node agent's row is chosen by Config.NodeAgent, never by
// --controllers, and may run alone (`up --without-loops`, the harness's
// restartable agent).
func TestNodeAgentRowIsSelectedByItsConfig(t *testing.T) {
	rc := &rest.Config{Host: "https://127.0.0.1:1"}
	agent := &NodeAgent{DataDir: "/data", Nodes: []nodeagent.Node{{Name: "node-1", Endpoints: []string{"unix:///tmp/a.sock"}}}}
	if slices.Contains(Known(), NodeAgentLoop) {
		t.Errorf("Known() = %v: the node agent is not one of --controllers", Known())
	}
	for _, tc := range []struct {
		name string
		cfg  Config
		want string // "" = valid
		rows []string
	}{
		{"alone", Config{REST: rc, NodeAgent: agent}, "", []string{NodeAgentLoop}},
		{"with the loops", Config{REST: rc, Controllers: []string{Binder}, NodeAgent: agent}, "", []string{Binder, NodeAgentLoop}},
		{"neither", Config{REST: rc}, "no controllers selected", nil},
		{"no nodes", Config{REST: rc, NodeAgent: &NodeAgent{DataDir: "/data"}}, "at least one node", nil},
		{"no data dir", Config{REST: rc, NodeAgent: &NodeAgent{Nodes: agent.Nodes}}, "data dir", nil},
		{"elected", Config{REST: rc, NodeAgent: agent, LeaderElect: true, LeaderElectNamespace: "ns", LeaderElectName: "n"},
			"leader election", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("%v, want valid", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want it to say %s", err, tc.want)
			case tc.want != "":
				return
			}
			var rows []string
			for _, r := range selectedRows(tc.cfg) {
				rows = append(rows, r.name)
			}
			if !slices.Equal(rows, tc.rows) {
				t.Errorf("rows %v, want %v", rows, tc.rows)
			}
		})
	}
}
