package protection

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func class(mods ...func(*storagev1.VolumeAttributesClass)) *storagev1.VolumeAttributesClass {
	c := &storagev1.VolumeAttributesClass{ObjectMeta: metav1.ObjectMeta{Name: "gold"}, DriverName: "d"}
	for _, m := range mods {
		m(c)
	}
	return c
}

func classProtected(c *storagev1.VolumeAttributesClass) {
	c.Finalizers = append(c.Finalizers, ClassFinalizer)
}
func classDeleting(c *storagev1.VolumeAttributesClass) { c.DeletionTimestamp = &metav1.Time{} }

func pvOf(class string) *v1.PersistentVolume {
	return &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-" + class},
		Spec: v1.PersistentVolumeSpec{VolumeAttributesClassName: ptr.To(class)}}
}

func claimWith(spec, current, target string) *v1.PersistentVolumeClaim {
	c := claim()
	if spec != "" {
		c.Spec.VolumeAttributesClassName = ptr.To(spec)
	}
	if current != "" {
		c.Status.CurrentVolumeAttributesClassName = ptr.To(current)
	}
	if target != "" {
		c.Status.ModifyVolumeStatus = &v1.ModifyVolumeStatus{TargetVolumeAttributesClassName: target}
	}
	return c
}

// The cases of the reference's TestVACProtectionController, as decisions,
// and the live confirmation volplane adds before a finalizer goes.
func TestDecideClass(t *testing.T) {
	cases := []struct {
		name   string
		facts  ClassFacts
		want   Action
		reason Reason
	}{
		{"class without finalizer -> added", ClassFacts{Class: class()}, AddFinalizer, ReasonUnprotected},
		{"class with finalizer -> nothing", ClassFacts{Class: class(classProtected)}, None, ReasonProtected},
		{"deleted class without our finalizer -> nothing", ClassFacts{Class: class(classDeleting)}, None, ReasonFinalizerGone},
		{"deleted class used by a PV -> kept", ClassFacts{Class: class(classProtected, classDeleting),
			CachedPVs: []*v1.PersistentVolume{pvOf("gold")}}, Keep, ReasonUsedByVolume},
		{"deleted class a claim asks for -> kept", ClassFacts{Class: class(classProtected, classDeleting),
			CachedClaims: []*v1.PersistentVolumeClaim{claimWith("gold", "", "")}}, Keep, ReasonUsedByClaim},
		{"deleted class a claim's volume has now -> kept", ClassFacts{Class: class(classProtected, classDeleting),
			CachedClaims: []*v1.PersistentVolumeClaim{claimWith("silver", "gold", "")}}, Keep, ReasonUsedByClaim},
		{"deleted class a modification moves to -> kept", ClassFacts{Class: class(classProtected, classDeleting),
			CachedClaims: []*v1.PersistentVolumeClaim{claimWith("silver", "silver", "gold")}}, Keep, ReasonUsedByClaim},
		{"deleted class nothing cached uses -> live list first", ClassFacts{Class: class(classProtected, classDeleting),
			CachedPVs: []*v1.PersistentVolume{pvOf("silver")}}, ListUsers, ReasonNotInCache},
		{"deleted class a claim of the live list uses -> kept", ClassFacts{Class: class(classProtected, classDeleting), Listed: true,
			LiveClaims: []*v1.PersistentVolumeClaim{claimWith("gold", "", "")}}, Keep, ReasonUsedByClaim},
		{"deleted class nothing uses -> removed", ClassFacts{Class: class(classProtected, classDeleting), Listed: true,
			LivePVs: []*v1.PersistentVolume{pvOf("silver")}, LiveClaims: []*v1.PersistentVolumeClaim{claimWith("silver", "", "")}},
			RemoveFinalizer, ReasonUnused},
	}
	for _, tc := range cases {
		d := DecideClass(tc.facts)
		if d.Action != tc.want || d.Reason != tc.reason {
			t.Errorf("%s: got %s, want %s: %s", tc.name, d, tc.want, tc.reason)
		}
	}
}

func TestClaimClassesAndDropped(t *testing.T) {
	if got := ClaimClasses(claimWith("gold", "silver", "gold")); !slices.Equal(got, []string{"gold", "silver"}) {
		t.Errorf("classes %v", got)
	}
	if got := ClaimClasses(claimWith("", "", "")); got != nil {
		t.Errorf("classes %v", got)
	}
	if got := VolumeClasses(&v1.PersistentVolume{Spec: v1.PersistentVolumeSpec{VolumeAttributesClassName: ptr.To("")}}); got != nil {
		t.Errorf("empty name counted: %v", got)
	}
	if got := Dropped([]string{"gold", "silver"}, []string{"silver"}); !slices.Equal(got, []string{"gold"}) {
		t.Errorf("dropped %v", got)
	}
}
