package provisioning

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

// Only an update that moved nothing but the in-progress marks is the
// provisioner's own bookkeeping; any other change is news.
func TestOnlyMarksChanged(t *testing.T) {
	pinned := func(c *v1.PersistentVolumeClaim) {
		withFinalizer(c)
		c.Annotations[AnnEndpointNode] = "node-1"
		c.Annotations[AnnCreateRequest] = "{}"
	}
	at := func(rv string) func(*v1.PersistentVolumeClaim) {
		return func(c *v1.PersistentVolumeClaim) { c.ResourceVersion = rv }
	}
	cases := []struct {
		name     string
		old, cur *v1.PersistentVolumeClaim
		want     bool
	}{
		{"marks put on", claim(at("1")), claim(at("2"), pinned), true},
		{"marks taken off", claim(at("2"), pinned), claim(at("3")), true},
		{"pin moved", claim(at("2"), pinned), claim(at("3"), pinned, func(c *v1.PersistentVolumeClaim) { c.Annotations[AnnEndpointNode] = "node-2" }), true},
		{"nothing but the version", claim(at("1")), claim(at("2")), false},
		{"marks and the selected node", claim(at("2"), pinned, selectedNode("node-1")), claim(at("3")), false},
		{"marks and the deletion", claim(at("2"), pinned), claim(at("3"), deleting), false},
	}
	for _, tc := range cases {
		if got := OnlyMarksChanged(tc.old, tc.cur); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
