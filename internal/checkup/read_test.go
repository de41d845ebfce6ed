package checkup

import (
	"reflect"
	"testing"

	csipb "github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/volplane/volplane/internal/csi"
	"github.com/volplane/volplane/internal/invariants"
)

func entry(id string, size int64, nodes ...string) *csipb.ListVolumesResponse_Entry {
	return &csipb.ListVolumesResponse_Entry{Volume: &csipb.Volume{VolumeId: id, CapacityBytes: size},
		Status: &csipb.ListVolumesResponse_VolumeStatus{PublishedNodeIds: nodes}}
}

// One listing serves both readers: a node-local endpoint is on the node
// its one topology segment names; a publishing one says where each volume
// is attached.
func TestAListingIsTheInvariantsBackendOfItsEndpoint(t *testing.T) {
	local := Listing{Info: csi.Info{Driver: "local", Controller: true, List: true, Node: true, Accessibility: true,
		NodeID: "node-1", Topology: map[string]string{"topology/node": "node-1"}}, Entries: []*csipb.ListVolumesResponse_Entry{entry("a", 5)}}
	network := Listing{Info: csi.Info{Driver: "network", Controller: true, List: true, Publish: true},
		Entries: []*csipb.ListVolumesResponse_Entry{entry("b", 7, "node-2"), entry("c", 9)}}
	for _, tc := range []struct {
		listing Listing
		want    invariants.Backend
	}{
		{local, invariants.Backend{Driver: "local", Node: "node-1", TopologyKey: "topology/node", VolumeIDs: []string{"a"},
			Published: map[string][]string{}, Capacity: map[string]int64{"a": 5}}},
		{network, invariants.Backend{Driver: "network", Attaches: true, VolumeIDs: []string{"b", "c"},
			Published: map[string][]string{"b": {"node-2"}}, Capacity: map[string]int64{"b": 7, "c": 9}}},
	} {
		if got := invariantBackend(tc.listing); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %+v, want %+v", tc.listing.Info.Driver, got, tc.want)
		}
	}
	if b := doctorBackend(local); b.Node != "node-1" || len(b.Volumes) != 1 || b.Volumes[0].CapacityBytes != 5 {
		t.Errorf("doctor backend %+v", b)
	}
}
