package mounting

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/equality"
)

// NodeDriver is what a CSI node service said of itself (NodeGetInfo), as
// the node's CSINode records it.
type NodeDriver struct {
	Name, NodeID string
	Topology     map[string]string
	// MaxVolumes is the node's volume limit; 0 for none.
	MaxVolumes int64
}

// RegisterDrivers is the CSINode spec once the node's drivers are
// registered, as the kubelet's plugin registration writes them: name, node
// ID, topology keys, and the volume limit as allocatable count; entries of
// other drivers are kept. It says whether that changes cur, which is not
// modified.
func RegisterDrivers(cur storagev1.CSINodeSpec, drivers []NodeDriver) (storagev1.CSINodeSpec, bool) {
	upd := *cur.DeepCopy()
	for _, d := range slices.SortedFunc(slices.Values(drivers), func(a, b NodeDriver) int { return strings.Compare(a.Name, b.Name) }) {
		upd.Drivers = withDriver(upd.Drivers, csiNodeDriver(d))
	}
	return upd, !equality.Semantic.DeepEqual(cur, upd)
}

func csiNodeDriver(d NodeDriver) storagev1.CSINodeDriver {
	out := storagev1.CSINodeDriver{Name: d.Name, NodeID: d.NodeID, TopologyKeys: slices.Sorted(maps.Keys(d.Topology))}
	if d.MaxVolumes > 0 {
		count := int32(min(d.MaxVolumes, int64(1<<31-1)))
		out.Allocatable = &storagev1.VolumeNodeResources{Count: &count}
	}
	return out
}

// withDriver replaces the entry of d's driver, or appends it.
func withDriver(drivers []storagev1.CSINodeDriver, d storagev1.CSINodeDriver) []storagev1.CSINodeDriver {
	for i := range drivers {
		if drivers[i].Name == d.Name {
			drivers[i] = d
			return drivers
		}
	}
	return append(drivers, d)
}

// TopologyLabels are the node's labels once its drivers' topology segments
// are on it, as the kubelet's registration labels the Node: a key the node
// already has with another value is a collision, refused with an error
// naming both (the node is not relabeled). It says whether that changes
// cur, which is not modified.
func TopologyLabels(cur map[string]string, drivers []NodeDriver) (map[string]string, bool, error) {
	upd := maps.Clone(cur)
	if upd == nil {
		upd = map[string]string{}
	}
	changed := false
	for _, d := range drivers {
		for _, key := range slices.Sorted(maps.Keys(d.Topology)) {
			value := d.Topology[key]
			have, ok := upd[key]
			switch {
			case ok && have != value:
				return cur, false, fmt.Errorf("driver %s reports topology %s=%s, but the node is labeled %s=%s", d.Name, key, value, key, have)
			case !ok:
				upd[key] = value
				changed = true
			}
		}
	}
	return upd, changed, nil
}
