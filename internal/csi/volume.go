package csi

import (
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	volumehelpers "k8s.io/component-helpers/storage/volume"
)

// ForVolume is ForDelete for a PersistentVolume: the endpoint of driver
// that holds pv's volume, told by the PV's node affinity, or why none can
// be told. The provisioner deletes and the attacher publishes through it.
// A node affinity with a term on none of the keys the driver's endpoints
// report says nothing about which of them holds the volume
// (ErrAffinityNotOnDriverKeys): the first endpoint would answer OK or
// NotFound for an ID it never made.
func (p *Pool) ForVolume(driver string, pv *v1.PersistentVolume) (*Endpoint, error) {
	var accessible func(map[string]string) bool
	if a := pv.Spec.NodeAffinity; a != nil && a.Required != nil && len(a.Required.NodeSelectorTerms) > 0 {
		keys := p.TopologyKeys(driver)
		if len(keys) > 0 && !onDriverKeys(pv, keys) {
			return nil, fmt.Errorf("%w (driver %q reports %v)", ErrAffinityNotOnDriverKeys, driver, keys)
		}
		accessible = accessibleVia(pv, keys)
	}
	return p.ForDelete(driver, accessible)
}

// onDriverKeys says whether every term of the PV's node affinity requires
// something of one of keys, or names fields: a term that does neither is
// met wherever the driver's instances are, so it tells none apart.
func onDriverKeys(pv *v1.PersistentVolume, keys []string) bool {
	for _, t := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms {
		named := slices.ContainsFunc(t.MatchExpressions, func(r v1.NodeSelectorRequirement) bool { return slices.Contains(keys, r.Key) })
		if !named && len(t.MatchFields) == 0 {
			return false
		}
	}
	return true
}

// accessibleVia says whether an endpoint's topology (taken as node labels)
// satisfies the PV's node affinity, for the driver that holds the volume,
// which reports only the topology keys given: requirements on other keys
// (the region a translated in-tree PV adds to its zone, say) cannot tell
// the driver's endpoints apart, so they are left out. A term left with no
// requirement on the driver's keys is met by every endpoint; ForVolume
// asks it only of a driver that reports no key (every endpoint alike) or
// of terms that keep one (onDriverKeys).
func accessibleVia(pv *v1.PersistentVolume, keys []string) func(map[string]string) bool {
	narrowed := pv.DeepCopy()
	var terms []v1.NodeSelectorTerm
	for _, t := range pv.Spec.NodeAffinity.Required.NodeSelectorTerms {
		kept := slices.DeleteFunc(slices.Clone(t.MatchExpressions), func(r v1.NodeSelectorRequirement) bool {
			return !slices.Contains(keys, r.Key)
		})
		if len(kept) == 0 && len(t.MatchFields) == 0 {
			return func(map[string]string) bool { return true }
		}
		terms = append(terms, v1.NodeSelectorTerm{MatchExpressions: kept, MatchFields: t.MatchFields})
	}
	narrowed.Spec.NodeAffinity.Required.NodeSelectorTerms = terms
	return func(seg map[string]string) bool { return volumehelpers.CheckNodeAffinity(narrowed, seg) == nil }
}
