package provisioning

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// A class parameter no provisioner knows, in the namespace reserved for the
// provisioner's own parameters, fails provisioning: the user is told why,
// and nothing is made.
func TestUnknownReservedClassParameterFailsProvisioning(t *testing.T) {
	e := newEnv(t)
	e.createClaim(e.claim("data", classBadParam, "100Mi"))
	ev := e.waitClaimEvent("data", corev1.EventTypeWarning, "ProvisioningFailed", "failed to strip CSI Parameters of prefixed keys: ")
	if !strings.Contains(ev.Message, badParamKey) {
		t.Errorf("ProvisioningFailed %q does not name the parameter %s", ev.Message, badParamKey)
	}
	e.holds("claim stays Pending, nothing provisioned", 2*time.Second, e.pendingWithoutVolume("data"))
	e.noClaimEvent("data", "ProvisioningSucceeded")
}

// A request larger than any node's free capacity fails on every node: the
// user is told, and no volume, PV or partial volume is left anywhere.
func TestRequestBeyondEveryNodesCapacityFailsProvisioning(t *testing.T) {
	e := newEnv(t)
	e.createClaim(e.claim("huge", classImmediate, "2Gi"))
	e.waitClaimEvent("huge", corev1.EventTypeWarning, "ProvisioningFailed", "rpc error: code = ResourceExhausted desc = ")
	e.holds("claim stays Pending, nothing provisioned", 2*time.Second, e.pendingWithoutVolume("huge"))
	e.noClaimEvent("huge", "ProvisioningSucceeded")
}

// A final error from the driver for a claim the scheduler placed removes
// the selected-node annotation, so the scheduler can choose again. The
// driver serves single-node access modes only, so a ReadWriteMany claim is
// refused for good.
func TestFinalErrorOnSelectedNodeAsksForRescheduling(t *testing.T) {
	e := newEnv(t)
	e.createClaim(e.claim("shared", classWait, "100Mi", accessModes(corev1.ReadWriteMany)))
	e.waitClaimEvent("shared", corev1.EventTypeNormal, "WaitForFirstConsumer", "")
	removed := e.watchSelectedNodeRemoved("shared")
	e.createPod("app", "shared", "")

	ev := e.waitClaimEvent("shared", corev1.EventTypeWarning, "ProvisioningFailed", "rpc error: code = ")
	t.Logf("ProvisioningFailed: %s", ev.Message)
	select {
	case node := <-removed:
		t.Logf("selected-node %s was removed", node)
	case <-time.After(waitTimeout):
		t.Fatalf("selected-node was never set and then removed; claim annotations %v", e.getClaim("shared").Annotations)
	}
	e.holds("claim stays Pending, nothing provisioned", time.Second, e.pendingWithoutVolume("shared"))
}
