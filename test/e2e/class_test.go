package e2e

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/volplane/volplane/internal/binding"
)

// A claim created with no class, while no default class existed, gets the
// default class written into spec.storageClassName once one appears, and is
// then handed to that class's provisioner.
func TestClaimWithoutClassGetsDefaultClassCreatedLater(t *testing.T) {
	e := newEnv(t)
	e.requireNoDefaultClass()
	// The selector keeps the class-less claim off class "" PVs of other tests.
	e.createClaim(e.claim("data", "1Gi", claimNoClass(), claimSelector("e2e-ns", e.ns)))
	e.waitClaimEvent("data", v1.EventTypeNormal, binding.EventFailedBinding, binding.MsgNoVolumesNoClass)
	if c := e.getClaim("data"); c.Spec.StorageClassName != nil {
		t.Fatalf("claim class %q at creation, want none (no default class yet)", *c.Spec.StorageClassName)
	}

	e.createClass(e.ns+"-default", "example.com/none", storagev1.VolumeBindingImmediate, true)
	e.eventually("default class assigned", func() string {
		c := e.getClaim("data")
		if c.Spec.StorageClassName == nil {
			return "no class"
		}
		if *c.Spec.StorageClassName != e.ns+"-default" {
			return "class " + *c.Spec.StorageClassName
		}
		return ""
	})
	e.waitClaimEvent("data", v1.EventTypeNormal, binding.EventExternalProvisioning,
		binding.MsgExternalProvisioning("example.com/none"))
	if c := e.waitClaimPhase("data", v1.ClaimPending); c.Annotations[annProvisioner] != "example.com/none" {
		t.Errorf("claim annotations %v, want the default class's provisioner", c.Annotations)
	}
}

// With several default classes the newest one is assigned.
func TestNewestDefaultClassIsAssigned(t *testing.T) {
	e := newEnv(t)
	e.requireNoDefaultClass()
	// The beta class annotation (even "") counts as a class, so the claim is
	// not given a default while both defaults are being created; removing
	// it below makes both defaults visible to a single sync.
	e.createClaim(e.claim("data", "1Gi", claimNoClass(), claimSelector("e2e-ns", e.ns),
		claimAnnotation(annBetaClass, "")))
	e.waitClaimEvent("data", v1.EventTypeNormal, binding.EventFailedBinding, binding.MsgNoVolumesNoClass)

	older := e.createClass(e.ns+"-older", "example.com/none", storagev1.VolumeBindingImmediate, true)
	// Creation timestamps have one-second resolution: make "newest" real.
	time.Sleep(1100 * time.Millisecond)
	newer := e.createClass(e.ns+"-newer", "example.com/none", storagev1.VolumeBindingImmediate, true)
	if !newer.CreationTimestamp.After(older.CreationTimestamp.Time) {
		t.Fatalf("creation times %v and %v do not order the classes", older.CreationTimestamp, newer.CreationTimestamp)
	}
	// The binder learns of classes through its own watch; give it a moment
	// to have seen both before the claim change reaches it.
	time.Sleep(500 * time.Millisecond)

	patch := []byte(`{"metadata":{"annotations":{"` + annBetaClass + `":null}}}`)
	if _, err := e.client.CoreV1().PersistentVolumeClaims(e.ns).Patch(e.ctx, "data", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatalf("remove beta class annotation: %v", err)
	}
	e.eventually("newest default class assigned", func() string {
		c := e.getClaim("data")
		if c.Spec.StorageClassName == nil {
			return "no class"
		}
		if *c.Spec.StorageClassName != newer.Name {
			return "class " + *c.Spec.StorageClassName
		}
		return ""
	})
}
