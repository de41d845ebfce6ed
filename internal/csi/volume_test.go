package csi

import (
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
	case !accessibleVia(pv, []string{"other"})(map[string]string{"other": "x"}):
		t.Error("a volume with no requirement on the driver's keys is accessible from all its endpoints")
	}
	if pv.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions[1].Key != region {
		t.Error("accessibleVia changed the PV it was given")
	}
}
