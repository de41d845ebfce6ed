package e2e

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PVs are grouped by their set of access modes and the group with the
// fewest modes is searched first: an RWO claim takes a bigger RWO PV over a
// smaller RWO+RWX one.
func TestClaimPrefersVolumeWithFewestAccessModes(t *testing.T) {
	e := newEnv(t)
	e.availablePV(e.pv("rwo-rwx", "1Gi", pvModes(v1.ReadWriteOnce, v1.ReadWriteMany)))
	e.availablePV(e.pv("rwo", "5Gi"))
	e.createClaim(e.claim("data", "1Gi"))
	e.waitBound("data", e.ns+"-rwo")
	e.stays("the RWO+RWX PV stays free", time.Second, pvStaysUnclaimed(e, e.ns+"-rwo-rwx"))
}

// A claim asking for RWX only considers PVs that offer RWX, however small
// the others are.
func TestClaimOnlyConsidersVolumesOfferingItsAccessModes(t *testing.T) {
	e := newEnv(t)
	e.availablePV(e.pv("rwo", "1Gi"))
	e.availablePV(e.pv("rwx", "5Gi", pvModes(v1.ReadWriteMany)))
	e.createClaim(e.claim("shared", "1Gi", claimModes(v1.ReadWriteMany)))
	e.waitBound("shared", e.ns+"-rwx")
	if c := e.getClaim("shared"); len(c.Status.AccessModes) != 1 || c.Status.AccessModes[0] != v1.ReadWriteMany {
		t.Errorf("claim status access modes %v, want the PV's [RWX]", c.Status.AccessModes)
	}
	e.stays("the RWO PV stays free", time.Second, pvStaysUnclaimed(e, e.ns+"-rwo"))
}

// A label selector on the claim filters PVs before size is considered.
func TestClaimSelectorSkipsVolumesWithoutTheLabels(t *testing.T) {
	e := newEnv(t)
	e.availablePV(e.pv("plain", "1Gi"))
	e.availablePV(e.pv("fast", "5Gi", pvLabel("tier", "fast")))
	e.createClaim(e.claim("data", "1Gi", claimSelector("tier", "fast")))
	e.waitBound("data", e.ns+"-fast")
	e.stays("the unlabelled PV stays free", time.Second, pvStaysUnclaimed(e, e.ns+"-plain"))
}

// Volume modes must be equal: a Block claim takes only a Block PV and a
// claim without a mode (Filesystem) only a Filesystem PV.
func TestClaimOnlyBindsVolumeOfItsVolumeMode(t *testing.T) {
	e := newEnv(t)
	e.availablePV(e.pv("block", "1Gi", pvBlock()))
	e.availablePV(e.pv("fs", "5Gi"))
	e.createClaim(e.claim("files", "1Gi"))
	e.waitBound("files", e.ns+"-fs")
	e.createClaim(e.claim("raw", "1Gi", claimBlock()))
	e.waitBound("raw", e.ns+"-block")

	e.createClaim(e.claim("raw-too", "1Gi", claimBlock()))
	e.availablePV(e.pv("fs-spare", "1Gi"))
	e.stays("a Block claim ignores a free Filesystem PV", 3*time.Second, claimStaysPending(e, "raw-too"))
}

// Class "" is a class of its own: a claim asking for "" binds only PVs
// without a class, and a PV without a class serves no claim of a named class.
func TestClaimWithEmptyClassOnlyBindsVolumesWithoutClass(t *testing.T) {
	e := newEnv(t)
	sel := claimSelector("e2e-ns", e.ns) // never reach class "" PVs of other tests
	e.availablePV(e.pv("classy", "1Gi"))
	e.availablePV(e.pv("classless", "5Gi", pvClass("")))
	e.createClaim(e.claim("plain", "1Gi", claimClass(""), sel))
	e.waitBound("plain", e.ns+"-classless")
	if c := e.getClaim("plain"); c.Spec.StorageClassName == nil || *c.Spec.StorageClassName != "" {
		t.Errorf("claim class %v, want \"\" kept (no default class assigned)", c.Spec.StorageClassName)
	}

	e.availablePV(e.pv("classless-spare", "1Gi", pvClass("")))
	e.createClaim(e.claim("named", "1Gi", sel))
	e.waitBound("named", e.ns+"-classy")
	e.stays("no named-class claim takes the classless PV", time.Second, pvStaysUnclaimed(e, e.ns+"-classless-spare"))
}

// A PV being deleted (held by a finalizer) is never bound, even when it is
// the best fit.
func TestClaimSkipsVolumeBeingDeleted(t *testing.T) {
	e := newEnv(t)
	doomed := e.availablePV(e.pv("doomed", "1Gi", pvFinalizer(testFinalizer)))
	if err := e.client.CoreV1().PersistentVolumes().Delete(e.ctx, doomed.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete PV: %v", err)
	}
	if pv := e.getPV(doomed.Name); pv.DeletionTimestamp == nil {
		t.Fatalf("PV %s has no deletionTimestamp; its finalizer should hold it", doomed.Name)
	}
	// Created after the deletion and seen by the binder: so is the deletion.
	e.availablePV(e.pv("alive", "5Gi"))
	e.createClaim(e.claim("data", "1Gi"))
	e.waitBound("data", e.ns+"-alive")
	e.stays("the PV being deleted stays unclaimed", time.Second, pvStaysUnclaimed(e, doomed.Name))
}
