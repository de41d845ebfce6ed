package mounting

import (
	"testing"

	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestRegisterDriversKeepsOthersAndWritesOnlyAChange(t *testing.T) {
	other := storagev1.CSINodeDriver{Name: "other.csi", NodeID: "n"}
	drivers := []NodeDriver{
		{Name: network, NodeID: "node-1", Topology: map[string]string{"zone": "a", "node": "node-1"}},
		{Name: local, NodeID: "node-1", MaxVolumes: 1 << 40},
	}
	spec, changed := RegisterDrivers(storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{other}}, drivers)
	if !changed || len(spec.Drivers) != 3 || spec.Drivers[0].Name != "other.csi" || spec.Drivers[1].Name != local || spec.Drivers[2].Name != network {
		t.Fatalf("drivers %+v: want the other kept, then ours by name", spec.Drivers)
	}
	if c := spec.Drivers[1].Allocatable; c == nil || *c.Count != 1<<31-1 {
		t.Errorf("allocatable %+v: want the limit capped at int32", c)
	}
	if keys := spec.Drivers[2].TopologyKeys; len(keys) != 2 || keys[0] != "node" || keys[1] != "zone" {
		t.Errorf("topology keys %v: want sorted", keys)
	}
	if spec.Drivers[2].Allocatable != nil {
		t.Error("a driver without a limit has an allocatable count")
	}
	if _, changed := RegisterDrivers(spec, drivers); changed {
		t.Error("registering the same drivers again is a change")
	}
	drivers[0].NodeID = "renamed"
	if again, changed := RegisterDrivers(spec, drivers); !changed || again.Drivers[2].NodeID != "renamed" || spec.Drivers[2].NodeID != "node-1" {
		t.Errorf("a new node ID: changed %v, %+v; the spec given must not be modified", changed, again.Drivers[2])
	}
}

func TestVolDataReadsBack(t *testing.T) {
	d := VolData{PV: "pv-1", Handle: "h-1", Driver: local, Done: true, Size: "2Gi", RefusedInUse: "bad"}
	s := d.Staged(false)
	if s.Size.Cmp(resource.MustParse("2Gi")) != 0 || !s.RefusedInUse.IsZero() || !s.Done || s.PV != "pv-1" {
		t.Errorf("staged %+v: want 2Gi, no refused size (it does not parse), done", s)
	}
	if p := d.Published(podUID, true); p.PodUID != podUID || p.Handle != "h-1" || !p.Done || !p.Block {
		t.Errorf("published %+v", p)
	}
}

func TestTopologyLabelsAddTheDriversSegments(t *testing.T) {
	cur := map[string]string{"kubernetes.io/hostname": "node-1", "zone": "a"}
	drivers := []NodeDriver{{Name: "x", Topology: map[string]string{"zone": "a", "rack": "r1"}}}
	got, changed, err := TopologyLabels(cur, drivers)
	if err != nil || !changed || got["rack"] != "r1" || got["zone"] != "a" || got["kubernetes.io/hostname"] != "node-1" {
		t.Fatalf("got %v, changed %v, err %v", got, changed, err)
	}
	if _, ok := cur["rack"]; ok {
		t.Error("TopologyLabels modified its input")
	}
	if _, changed, err := TopologyLabels(got, drivers); changed || err != nil {
		t.Errorf("labels already there: changed %v, err %v", changed, err)
	}
	if _, _, err := TopologyLabels(cur, []NodeDriver{{Name: "y", Topology: map[string]string{"zone": "b"}}}); err == nil {
		t.Error("a segment that contradicts the node's label must be refused")
	}
}
