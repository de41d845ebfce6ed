package modification

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// FuzzDecide feeds Decide any class names a claim's user can write (spec),
// any the modifier may have recorded (current, target, status), classes
// that exist or not with any parameters, and any memory. Whatever it
// decides, it modifies only to a class that exists, named by the claim,
// with that class's parameters, and never touches a volume bound to
// another claim.
func FuzzDecide(f *testing.F) {
	f.Add("fast", "standard", "", "", "tier", "gold", uint8(0))
	f.Add("", "standard", "fast", string(v1.PersistentVolumeClaimModifyVolumeInProgress), "", "", uint8(1))
	f.Fuzz(func(t *testing.T, spec, current, target, status, key, value string, flags uint8) {
		c := claim(func(c *v1.PersistentVolumeClaim) {
			c.Spec.VolumeAttributesClassName = optional(spec, flags&1 != 0)
			c.Status.CurrentVolumeAttributesClassName = optional(current, flags&2 != 0)
			if status != "" || target != "" {
				modifyStatus(v1.PersistentVolumeClaimModifyVolumeStatus(status), target)(c)
			}
			if flags&4 != 0 {
				withCondition(v1.PersistentVolumeClaimVolumeModifyingVolume, "m")(c)
			}
		})
		classes := map[string]*storagev1.VolumeAttributesClass{}
		for _, name := range []string{spec, target} {
			if flags&8 != 0 {
				classes[name] = &storagev1.VolumeAttributesClass{ObjectMeta: metav1.ObjectMeta{Name: name},
					DriverName: driver, Parameters: map[string]string{key: value}}
			}
		}
		fs := facts(c, func(f *Facts) {
			f.Classes, f.CanModify, f.Uncertain = classes, flags&16 == 0, flags&32 != 0
			if flags&64 != 0 {
				f.SlowRetryLeft = time.Minute
			}
			if flags&128 != 0 {
				f.Volume = volume(func(pv *v1.PersistentVolume) { pv.Spec.ClaimRef.UID = "another claim" })
			}
		})
		d := Decide(fs)
		switch {
		case flags&128 != 0 && d.Action != None:
			t.Fatalf("acted on a volume bound to another claim: %v", d)
		case d.Action == Modify && (d.Class == nil || d.Class != classes[d.Target]):
			t.Fatalf("modifies to %q with class %v, not the class of that name", d.Target, d.Class)
		case d.Action == Modify && d.Target != SpecClass(c) && d.Target != TargetClass(c):
			t.Fatalf("modifies to %q, named neither by the spec (%q) nor the status (%q)", d.Target, SpecClass(c), TargetClass(c))
		case d.Action == Wait && d.Wait <= 0:
			t.Fatalf("waits %v", d.Wait)
		}
	})
}

// optional is s as an optional class name: nil unless set.
func optional(s string, set bool) *string {
	if !set {
		return nil
	}
	return ptr.To(s)
}
