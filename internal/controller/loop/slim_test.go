package loop

import (
	"encoding/json"
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func slimClaim(name, size string) *v1.PersistentVolumeClaim {
	class := "fast"
	return &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns",
			Annotations: map[string]string{"pv.kubernetes.io/bind-completed": "yes"},
			Finalizers:  []string{"kubernetes.io/pvc-protection"}},
		Spec: v1.PersistentVolumeClaimSpec{StorageClassName: &class, VolumeName: "pv-" + name,
			AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Resources:   v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse(size)}}},
		Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound,
			Capacity: v1.ResourceList{v1.ResourceStorage: resource.MustParse(size)}},
	}
}

func slimVolume(name string) *v1.PersistentVolume {
	return &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"zone": "a"},
			Annotations: map[string]string{"pv.kubernetes.io/provisioned-by": "hostpath.volplane.io"}},
		Spec: v1.PersistentVolumeSpec{Capacity: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:      []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			StorageClassName: "fast",
			ClaimRef:         &v1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: "ns", Name: "c-" + name},
			PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{
				Driver: "hostpath.volplane.io", VolumeHandle: name, FSType: "ext4",
				VolumeAttributes: map[string]string{"kind": "fs"}}}},
	}
}

func samePointer(a, b any) bool {
	return reflect.ValueOf(a).Pointer() == reflect.ValueOf(b).Pointer()
}

// Objects holding equal maps come out of the transform holding one map,
// and each serializes exactly as it came in.
func TestSlimSharesEqualMapsAndChangesNoObject(t *testing.T) {
	saved := Shared
	Shared = NewIntern(16)
	defer func() { Shared = saved }()

	var claims []*v1.PersistentVolumeClaim
	for _, c := range []*v1.PersistentVolumeClaim{slimClaim("a", "1Gi"), slimClaim("b", "1Gi"), slimClaim("c", "1073741824")} {
		before, _ := json.Marshal(c)
		out, err := Slim(c)
		if err != nil {
			t.Fatal(err)
		}
		after, _ := json.Marshal(out)
		if string(before) != string(after) {
			t.Errorf("claim %s changed:\n%s\n%s", c.Name, before, after)
		}
		claims = append(claims, out.(*v1.PersistentVolumeClaim))
	}
	a, b, c := claims[0], claims[1], claims[2]
	if !samePointer(a.Spec.Resources.Requests, b.Spec.Resources.Requests) || !samePointer(a.Annotations, b.Annotations) ||
		!samePointer(a.Status.Capacity, b.Status.Capacity) || &a.Finalizers[0] != &b.Finalizers[0] || !samePointer(a.Spec.Resources.Requests, a.Status.Capacity) {
		t.Error("equal maps of two claims are not shared")
	}
	// Equal in value, written differently: a write of the shared copy
	// would send another text than the object held.
	if samePointer(a.Spec.Resources.Requests, c.Spec.Resources.Requests) {
		t.Error("1Gi and 1073741824 share one map")
	}

	var pvs []*v1.PersistentVolume
	for _, name := range []string{"p1", "p2"} {
		pv := slimVolume(name)
		before, _ := json.Marshal(pv)
		out, _ := Slim(pv)
		after, _ := json.Marshal(out)
		if string(before) != string(after) {
			t.Errorf("PV %s changed:\n%s\n%s", name, before, after)
		}
		pvs = append(pvs, out.(*v1.PersistentVolume))
	}
	if !samePointer(pvs[0].Spec.Capacity, pvs[1].Spec.Capacity) || !samePointer(pvs[0].Labels, pvs[1].Labels) ||
		!samePointer(pvs[0].Spec.CSI.VolumeAttributes, pvs[1].Spec.CSI.VolumeAttributes) {
		t.Error("equal maps of two PVs are not shared")
	}
	if err := Shared.Verify(); err != nil {
		t.Fatal(err)
	}

	// An append to a shared access-mode list copies it.
	modes := append(a.Spec.AccessModes, v1.ReadOnlyMany)
	if len(b.Spec.AccessModes) != 1 || b.Spec.AccessModes[0] != v1.ReadWriteOnce || len(modes) != 2 {
		t.Errorf("an append wrote into the shared access modes: %v, %v", b.Spec.AccessModes, modes)
	}
	fins := append(a.Finalizers, "other")
	if len(b.Finalizers) != 1 || b.Finalizers[0] != "kubernetes.io/pvc-protection" || len(fins) != 2 {
		t.Errorf("an append wrote into the shared finalizers: %v, %v", b.Finalizers, fins)
	}

	// A write into a cached object's map is what sharing cannot survive:
	// Verify finds it.
	a.Finalizers[0] = "x"
	if err := Shared.Verify(); err == nil {
		t.Error("Verify missed a shared finalizer list written in place")
	}
	a.Finalizers[0] = "kubernetes.io/pvc-protection"
	a.Annotations["pv.kubernetes.io/bind-completed"] = "no"
	if err := Shared.Verify(); err == nil {
		t.Error("Verify missed a shared map written in place")
	}
	a.Annotations["pv.kubernetes.io/bind-completed"] = "yes"
	a.Spec.Resources.Requests[v1.ResourceStorage] = resource.MustParse("2Gi")
	if err := Shared.Verify(); err == nil {
		t.Error("Verify missed a shared resource list written in place")
	}
}

// The table holds at most its size of each kind: maps seen once cannot
// grow it forever.
func TestInternIsBounded(t *testing.T) {
	in := NewIntern(8)
	for i := range 100 {
		in.Strings(map[string]string{"claim": string(rune('a' + i))})
		in.Resources(v1.ResourceList{v1.ResourceStorage: *resource.NewQuantity(int64(i+1), resource.BinarySI)})
	}
	if len(in.maps) > 8 || len(in.lists) > 8 {
		t.Errorf("table holds %d maps and %d lists, at most 8 each wanted", len(in.maps), len(in.lists))
	}
	if got := in.Strings(nil); got != nil {
		t.Errorf("nil map came back as %v", got)
	}
}
