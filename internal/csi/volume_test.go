package csi

import (
	"errors"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// A translated in-tree EBS PV requires zone and region, but the driver's
// endpoints report only the zone, so only the zone can tell them apart.
func TestVolumeIsMatchedToEndpointsOnTheDriversKeysOnly(t *testing.T) {
	zone, region := "topology.ebs.csi.aws.com/zone", "topology.kubernetes.io/region"
	pv := &v1.PersistentVolume{Spec: v1.PersistentVolumeSpec{NodeAffinity: &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{
		NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{
			{Key: zone, Operator: v1.NodeSelectorOpIn, Values: []string{"us-east-1a"}},
			{Key: region, Operator: v1.NodeSelectorOpIn, Values: []string{"us-east-1"}},
		}}}}}}}
	via := accessibleVia(pv, []string{zone})
	switch {
	case !via(map[string]string{zone: "us-east-1a"}):
		t.Error("the endpoint of the volume's zone is not accepted")
	case via(map[string]string{zone: "us-east-1b"}):
		t.Error("the endpoint of another zone is accepted")
	}
	if pv.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions[1].Key != region {
		t.Error("accessibleVia changed the PV it was given")
	}
}

// Issue 23: a PV whose node affinity names none of the keys the driver
// reports (only kubernetes.io/hostname, say) does not tell which of the
// driver's endpoints holds its volume. Deleting it through the first one
// would hear OK (or NotFound) for an ID that endpoint never made, and the
// PV would go while the data stays: wait and say why, as for an
// ambiguous endpoint.
func TestVolumeWithAffinityOnNoKeyOfTheDriverWaits(t *testing.T) {
	node := func(name string) *Endpoint {
		return &Endpoint{Address: name, Info: Info{Driver: "d", NodeID: name, Topology: map[string]string{"topology.d/node": name}}}
	}
	hostnameOnly := &v1.PersistentVolume{Spec: v1.PersistentVolumeSpec{NodeAffinity: &v1.VolumeNodeAffinity{Required: &v1.NodeSelector{
		NodeSelectorTerms: []v1.NodeSelectorTerm{{MatchExpressions: []v1.NodeSelectorRequirement{
			{Key: v1.LabelHostname, Operator: v1.NodeSelectorOpIn, Values: []string{"b"}},
		}}}}}}}
	for _, pool := range []*Pool{NewPool(node("a"), node("b")), NewPool(node("a"))} {
		got, err := pool.ForVolume("d", hostnameOnly)
		if !errors.Is(err, ErrAffinityNotOnDriverKeys) || got != nil {
			t.Errorf("%d endpoints: ForVolume = %v, %v; want no endpoint and %v", len(pool.Endpoints("d")), got, err, ErrAffinityNotOnDriverKeys)
		}
	}
	central := NewPool(&Endpoint{Address: "central", Info: Info{Driver: "d"}})
	if got, err := central.ForVolume("d", hostnameOnly); err != nil || got == nil || got.Address != "central" {
		t.Errorf("a central driver without topology: ForVolume = %v, %v; want its one endpoint", got, err)
	}
	if !accessibleVia(hostnameOnly, nil)(nil) {
		t.Error("for a driver that reports no key, every endpoint is alike")
	}
}
