package e2e

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"

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
	// The binder learns of classes through its own watch: wait until it has
	// seen the newer one, which a probe claim given the newer class proves
	// (a probe given the older one came too early; try another).
	e.eventually("the binder knows the newer default class", func() string {
		probe := e.createClaim(e.claim("probe-"+rand.String(5), "1Gi", claimNoClass(), claimSelector("e2e-ns", e.ns)))
		for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
			if class := e.getClaim(probe.Name).Spec.StorageClassName; class != nil {
				if *class == newer.Name {
					return ""
				}
				return "a probe claim got " + *class
			}
		}
		return "a probe claim got no class"
	})

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
