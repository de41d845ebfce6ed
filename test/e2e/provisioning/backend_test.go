package provisioning

import (
	"slices"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/volplane/volplane/internal/hostpath"
)

const topologyKey = hostpath.TopologyKey

// backendVolume is a volume as a node's driver lists it over CSI.
type backendVolume struct {
	node  string
	id    string
	bytes int64
	// clonedFrom is the ID of the volume it was created from, or "".
	clonedFrom string
}

func (v backendVolume) String() string { return v.node + ":" + v.id }

// backendVolumes lists every volume of every node's driver.
func (e *env) backendVolumes() []backendVolume {
	e.t.Helper()
	var out []backendVolume
	for _, d := range bed.drivers {
		token := ""
		for {
			resp, err := d.csi.ListVolumes(e.ctx, &csi.ListVolumesRequest{StartingToken: token})
			if err != nil {
				e.t.Fatalf("ListVolumes on %s: %v", d.node, err)
			}
			for _, entry := range resp.GetEntries() {
				v := entry.GetVolume()
				out = append(out, backendVolume{node: d.node, id: v.GetVolumeId(), bytes: v.GetCapacityBytes(),
					clonedFrom: v.GetContentSource().GetVolume().GetVolumeId()})
			}
			if token = resp.GetNextToken(); token == "" {
				break
			}
		}
	}
	return out
}

// newVolumes are the backend volumes made since the test began.
func (e *env) newVolumes() []backendVolume {
	e.t.Helper()
	vols := e.backendVolumes()
	return slices.DeleteFunc(vols, func(v backendVolume) bool { return e.earlier[v.id] })
}

// onlyNewVolume fails the test unless exactly one backend volume was made
// since the test began, and returns it.
func (e *env) onlyNewVolume() backendVolume {
	e.t.Helper()
	vols := e.newVolumes()
	if len(vols) != 1 {
		e.t.Fatalf("backend volumes made by the test: %v, want exactly one", vols)
	}
	return vols[0]
}

// deleteBackendVolume deletes a volume over CSI, as an administrator
// cleaning up would.
func (e *env) deleteBackendVolume(v backendVolume) {
	e.t.Helper()
	for _, d := range bed.drivers {
		if d.node != v.node {
			continue
		}
		if _, err := d.csi.DeleteVolume(e.ctx, &csi.DeleteVolumeRequest{VolumeId: v.id}); err != nil {
			e.t.Errorf("DeleteVolume %s: %v", v, err)
		}
	}
}
