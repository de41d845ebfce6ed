package provisioning

import (
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
