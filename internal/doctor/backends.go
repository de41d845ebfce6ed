package doctor

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	volumehelpers "k8s.io/component-helpers/storage/volume"

	"github.com/volplane/volplane/internal/binding"
)

// missingBackendVolumes: PVs of a driver whose volume no listing holds,
// neither the one before the cluster was read nor the one after; not
// those being deleted or reclaimed (Released or Failed with policy
// Delete), whose volume may go first. A volume is missing only when every
// endpoint that could hold it was listed (listingOf); the notes count the
// PVs that could not be checked, and why.
func missingBackendVolumes(s *Snapshot) ([]Finding, []string) {
	var out []Finding
	unchecked := map[string]int{}
	for _, pv := range s.Volumes {
		csi := pv.Spec.CSI
		if csi == nil || pv.DeletionTimestamp != nil || reclaiming(pv) {
			continue
		}
		listed, why := listingOf(s, pv)
		if why != "" {
			unchecked[fmt.Sprintf("of driver %s not checked: %s", csi.Driver, why)]++
			continue
		}
		if slices.ContainsFunc(listed, func(b Backend) bool { return b.holds(csi.VolumeHandle) || b.Relisted[csi.VolumeHandle] }) {
			continue
		}
		out = append(out, missingFinding(s, pv))
	}
	var notes []string
	for _, why := range slices.Sorted(maps.Keys(unchecked)) {
		notes = append(notes, fmt.Sprintf("%d PV(s) %s", unchecked[why], why))
	}
	return out, notes
}

// listingOf returns the listed endpoints of the PV's driver that could
// hold its volume, when they are all the endpoints that could: a central
// endpoint (one without topology) lists every volume of its driver; a
// node-local driver's volume may be on any node that runs the driver (its
// CSINode) and that the PV's node affinity allows (the node's labels, so
// that an affinity by hostname counts too). Otherwise why the listing is
// not complete.
func listingOf(s *Snapshot, pv *v1.PersistentVolume) ([]Backend, string) {
	driver := pv.Spec.CSI.Driver
	var local []Backend
	for _, b := range s.Backends {
		switch {
		case b.Driver != driver:
		case len(b.Topology) == 0:
			return []Backend{b}, ""
		default:
			local = append(local, b)
		}
	}
	if len(local) == 0 {
		return nil, "no endpoint of it was read"
	}
	var listed []Backend
	var unlisted []string
	runs := false
	for _, cn := range s.CSINodes {
		i := slices.IndexFunc(cn.Spec.Drivers, func(d storagev1.CSINodeDriver) bool { return d.Name == driver })
		if i < 0 {
			continue
		}
		runs = true
		if n := s.FindNode(cn.Name); n != nil && volumehelpers.CheckNodeAffinity(pv, n.Labels) != nil {
			continue
		}
		j := slices.IndexFunc(local, func(b Backend) bool { return b.Node == cn.Spec.Drivers[i].NodeID })
		if j < 0 {
			unlisted = append(unlisted, cn.Name)
			continue
		}
		listed = append(listed, local[j])
	}
	switch {
	case !runs:
		return nil, "no CSINode says which nodes run it"
	case len(unlisted) > 0:
		slices.Sort(unlisted)
		return nil, "the endpoints of node(s) " + strings.Join(unlisted, ", ") + " were not read"
	case len(listed) == 0:
		return nil, "no node that runs it is allowed by their node affinity"
	}
	return listed, ""
}

func reclaiming(pv *v1.PersistentVolume) bool {
	return pv.Spec.PersistentVolumeReclaimPolicy == v1.PersistentVolumeReclaimDelete &&
		(pv.Status.Phase == v1.VolumeReleased || pv.Status.Phase == v1.VolumeFailed)
}

func missingFinding(s *Snapshot, pv *v1.PersistentVolume) Finding {
	csi := pv.Spec.CSI
	f := Finding{Kind: KindMissingBackendVolume, Severity: SeverityProblem, Object: volumeObject(pv.Name),
		Problem: fmt.Sprintf("Its volume %s is gone from driver %s: its data is lost (phase %s).",
			csi.VolumeHandle, csi.Driver, pv.Status.Phase)}
	listing := fmt.Sprintf("should the volume be missing from the listing only by a fault of driver %s, ", csi.Driver)
	if c := boundClaim(s, pv); c != nil {
		f.Problem = fmt.Sprintf("Its volume %s is gone from driver %s: the data of claim %s/%s is lost (phase %s).",
			csi.VolumeHandle, csi.Driver, c.Namespace, c.Name, pv.Status.Phase)
		risk := "its pods lose the claim"
		if r := reclaimRisk(pv); r != "" {
			risk = listing + r
		}
		f.Fixes = append(f.Fixes, Fix{Says: fmt.Sprintf("delete claim %s/%s, whose data is already gone", c.Namespace, c.Name),
			Risk:    risk,
			Command: fmt.Sprintf("kubectl delete pvc -n %s %s", c.Namespace, c.Name)})
	}
	risk := listing + "no PV refers to it any more (doctor then reports it orphaned)"
	if slices.Contains(pv.Finalizers, binding.ExternalFinalizer) && pv.Spec.PersistentVolumeReclaimPolicy == v1.PersistentVolumeReclaimDelete {
		risk = listing + "the provisioner deletes it with its data (reclaim policy Delete)"
	}
	f.Fixes = append(f.Fixes, Fix{Says: "delete the PV, which names a volume that no longer exists",
		Risk: risk, Command: "kubectl delete pv " + pv.Name})
	return f
}

func (b Backend) holds(id string) bool {
	return slices.ContainsFunc(b.Volumes, func(v BackendVolume) bool { return v.ID == id })
}

func onNode(node string) string {
	if node == "" {
		return ""
	}
	return " on node " + node
}

func refersTo(pv *v1.PersistentVolume, b Backend, id string) bool {
	csi := pv.Spec.CSI
	return csi != nil && csi.Driver == b.Driver && csi.VolumeHandle == id && topologyFits(pv, b.Topology)
}

// topologyFits says whether a PV's node affinity allows the segment of a
// node-local endpoint (always true for an endpoint without one, or a PV
// without node affinity).
func topologyFits(pv *v1.PersistentVolume, segment map[string]string) bool {
	na := pv.Spec.NodeAffinity
	if len(segment) == 0 || na == nil || na.Required == nil {
		return true
	}
	return slices.ContainsFunc(na.Required.NodeSelectorTerms, func(t v1.NodeSelectorTerm) bool {
		for _, e := range t.MatchExpressions {
			if want, ok := segment[e.Key]; ok && e.Operator == v1.NodeSelectorOpIn && !slices.Contains(e.Values, want) {
				return false
			}
		}
		return true
	})
}
