package provisioning

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// A claim whose data source is another Bound claim of the same class gets a
// volume made from that claim's volume: on the same node, since a hostpath
// volume can be copied only where it lives.
func TestClaimClonedFromBoundClaimIsProvisionedFromItsVolume(t *testing.T) {
	e := newEnv(t)
	_, originPV, origin := e.provisioned("origin", classImmediate)
	c, pv, clone := e.provisioned("copy", classImmediate, clonedFrom("origin"))
	if clone.clonedFrom != origin.id {
		t.Errorf("backend volume %s made from %q, want from the origin's %s", clone, clone.clonedFrom, origin.id)
	}
	if clone.node != origin.node {
		t.Errorf("clone on %s, origin on %s", clone.node, origin.node)
	}
	e.expectProvisionedPV(pv, c, clone, corev1.PersistentVolumeReclaimDelete)
	if pv.Name == originPV.Name {
		t.Errorf("the clone was bound to the origin's PV %s", pv.Name)
	}
	e.waitClaimEvent("copy", corev1.EventTypeNormal, "ProvisioningSucceeded", "Successfully provisioned volume "+pv.Name)
}
