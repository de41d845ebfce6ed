package provisioning

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
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

// The marks go on before the create only where they must: always with no
// delay, to complete an earlier attempt's, and under a source's finalizer.
func TestMarkFirst(t *testing.T) {
	pinnedOnly := func(c *v1.PersistentVolumeClaim) { c.Annotations[AnnEndpointNode] = "node-1" }
	source := func(kind, group string) func(*v1.PersistentVolumeClaim) {
		return func(c *v1.PersistentVolumeClaim) {
			c.Spec.DataSourceRef = &v1.TypedObjectReference{Kind: kind, Name: "src", APIGroup: ptr.To(group)}
		}
	}
	cases := []struct {
		name      string
		claim     *v1.PersistentVolumeClaim
		markAfter time.Duration
		want      bool
	}{
		{"no delay", claim(), 0, true},
		{"a delay", claim(), time.Second, false},
		{"a negative delay", claim(), -time.Second, true},
		{"finalizer on already", claim(withFinalizer), time.Second, true},
		{"only a pin on", claim(pinnedOnly), time.Second, true},
		{"a clone", claim(source("PersistentVolumeClaim", "")), time.Second, true},
		{"a restore", claim(source("VolumeSnapshot", "snapshot.storage.k8s.io")), time.Second, true},
		{"a source refused", claim(source("VolumeSnapshot", "example.com")), time.Second, true},
	}
	for _, tc := range cases {
		if got := MarkFirst(tc.claim, tc.markAfter); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
