package e2e

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/volplane/volplane/internal/binding"
)

// A claim no PV fits, of a class with an external provisioner, is handed
// over: both storage-provisioner annotations name the provisioner, and the
// ExternalProvisioning event is recorded once, not on every resync.
func TestClaimIsHandedToExternalProvisionerOnce(t *testing.T) {
	e := newEnv(t)
	e.createClass(e.class, "example.com/csi", storagev1.VolumeBindingImmediate, false)
	e.createClaim(e.claim("data", "1Gi"))
	e.waitClaimEvent("data", v1.EventTypeNormal, binding.EventExternalProvisioning,
		binding.MsgExternalProvisioning("example.com/csi"))
	c := e.waitClaimPhase("data", v1.ClaimPending)
	for _, ann := range []string{annProvisioner, annBetaProvisioner} {
		if c.Annotations[ann] != "example.com/csi" {
			t.Errorf("claim annotation %s = %q, want example.com/csi", ann, c.Annotations[ann])
		}
	}

	time.Sleep(quietPeriodForEvent)
	evs := e.binderEvents("PersistentVolumeClaim", e.ns, "data", binding.EventExternalProvisioning)
	if len(evs) != 1 || evs[0].Count != 1 {
		t.Errorf("ExternalProvisioning recorded %v, want exactly once across resyncs", summarize(evs))
	}
	if c := e.getClaim("data"); c.Status.Phase != v1.ClaimPending || c.Spec.VolumeName != "" {
		t.Errorf("claim phase %s volumeName %q, want Pending, waiting for the provisioner", c.Status.Phase, c.Spec.VolumeName)
	}
}

// A claim with no class at all, no default class and no PV that fits is
// told so, once.
func TestClaimWithoutClassAndWithoutVolumeGetsFailedBinding(t *testing.T) {
	e := newEnv(t)
	e.requireNoDefaultClass()
	// The selector keeps the class-less claim off class "" PVs of other tests.
	e.createClaim(e.claim("data", "1Gi", claimNoClass(), claimSelector("e2e-ns", e.ns)))
	e.waitClaimEvent("data", v1.EventTypeNormal, binding.EventFailedBinding, binding.MsgNoVolumesNoClass)
	e.stays("claim stays Pending", 3*time.Second, claimStaysPending(e, "data"))
	c := e.getClaim("data")
	if c.Spec.StorageClassName != nil || hasAnnotation(c.ObjectMeta, annProvisioner) {
		t.Errorf("claim class %v annotations %v, want no class and no provisioner", c.Spec.StorageClassName, c.Annotations)
	}
	if evs := e.binderEvents("PersistentVolumeClaim", e.ns, "data", binding.EventFailedBinding); len(evs) != 1 || evs[0].Count != 1 {
		t.Errorf("FailedBinding recorded %v, want once across resyncs", summarize(evs))
	}
}
