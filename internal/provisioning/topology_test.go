package provisioning

import (
	"errors"
	"strings"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"
)

// A new volume is asked only of a node-local endpoint inside the topology
// the claim may use; one outside it (the pool's fallback when no served
// node is allowed) is refused with the topology named.
func TestOutsideTopology(t *testing.T) {
	nodeLocal := func(node string) Endpoint {
		return Endpoint{Driver: testDriver, NodeID: node, Topology: map[string]string{topoKey: node}}
	}
	central := Endpoint{Driver: testDriver, Topology: map[string]string{"zone": "a"}}
	requisite := func(segs ...map[string]string) *csipb.TopologyRequirement {
		r := &csipb.TopologyRequirement{}
		for _, s := range segs {
			r.Requisite = append(r.Requisite, &csipb.Topology{Segments: s})
		}
		return r
	}
	cases := []struct {
		name     string
		endpoint Endpoint
		req      *csipb.TopologyRequirement
		want     string
	}{
		{"no requirements", nodeLocal("a"), nil, ""},
		{"endpoint in the requisite", nodeLocal("a"), requisite(map[string]string{topoKey: "b"}, map[string]string{topoKey: "a"}), ""},
		{"no served node allowed", nodeLocal("a"), requisite(map[string]string{topoKey: "ghost"}),
			"no node served by driver " + testDriver + " is in the topology the claim may use: " + topoKey + "=ghost"},
		{"a key the driver does not report", nodeLocal("a"), requisite(map[string]string{"example.com/zone": "z1"}, map[string]string{"example.com/zone": "z2"}),
			"no node served by driver " + testDriver + " is in the topology the claim may use: example.com/zone=z1; example.com/zone=z2"},
		{"central endpoint: the driver decides", central, requisite(map[string]string{"zone": "b"}), ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := ""
			if err := OutsideTopology(tc.endpoint, tc.req); err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// A pinned claim goes to its pin's endpoint only, if served and within
// where the claim's volume may live.
func TestPinnedEndpoint(t *testing.T) {
	eps := []Endpoint{{Driver: testDriver, NodeID: "a", Topology: map[string]string{topoKey: "a"}},
		{Driver: testDriver, NodeID: "b", Topology: map[string]string{topoKey: "b"}}}
	if i, err := PinnedEndpoint(testDriver, eps, "b", nil); err != nil || i != 1 {
		t.Errorf("pin b: %d, %v; want endpoint 1", i, err)
	}
	if _, err := PinnedEndpoint(testDriver, eps, "c", nil); err == nil || !strings.Contains(err.Error(), `endpoint of node "c", which is not served now`) {
		t.Errorf("pin to a node not served: %v", err)
	}
	var misfit *PinMisfit
	if _, err := PinnedEndpoint(testDriver, eps, "b", []map[string]string{{topoKey: "a"}}); !errors.As(err, &misfit) || misfit.Node != "b" {
		t.Errorf("pin outside the allowed segments: %v", err)
	}
}

// A selected node that is gone is known by its driver's segment, or the
// scheduler must choose again.
func TestSelectedNodeGone(t *testing.T) {
	eps := []Endpoint{{NodeID: "a", Topology: map[string]string{topoKey: "a"}}, {NodeID: "b"}}
	if n, err := SelectedNodeGone("a", eps); err != nil || n.Labels[topoKey] != "a" {
		t.Errorf("node a: %v, %v", n, err)
	}
	for _, name := range []string{"b", "c"} {
		if _, err := SelectedNodeGone(name, eps); !IsFinal(err) {
			t.Errorf("node %s: %v, want a final error", name, err)
		}
	}
}
