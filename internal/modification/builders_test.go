package modification

import (
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Builders with defaults plus modifiers: a claim ns/data (uid-data) Bound to pv-1 whose
// current class is "standard" and whose spec asks for "standard"; a CSI PV
// of driver "d.example.com" with class "standard", bound to the claim; facts for both with the
// classes "standard" and "fast", a driver that can modify.

const driver = "d.example.com"

var (
	t0 = metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	t1 = metav1.NewTime(t0.Add(time.Minute))
)

func claim(mods ...func(*v1.PersistentVolumeClaim)) *v1.PersistentVolumeClaim {
	c := &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "data", UID: "uid-data"},
		Spec:       v1.PersistentVolumeClaimSpec{VolumeName: "pv-1", VolumeAttributesClassName: ptr.To("standard")},
		Status:     v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound, CurrentVolumeAttributesClassName: ptr.To("standard")},
	}
	for _, m := range mods {
		m(c)
	}
	return c
}

func wants(class string) func(*v1.PersistentVolumeClaim) {
	return func(c *v1.PersistentVolumeClaim) { c.Spec.VolumeAttributesClassName = ptr.To(class) }
}

func modifyStatus(s v1.PersistentVolumeClaimModifyVolumeStatus, target string) func(*v1.PersistentVolumeClaim) {
	return func(c *v1.PersistentVolumeClaim) {
		c.Status.ModifyVolumeStatus = &v1.ModifyVolumeStatus{Status: s, TargetVolumeAttributesClassName: target}
	}
}

func withCondition(t v1.PersistentVolumeClaimConditionType, msg string) func(*v1.PersistentVolumeClaim) {
	return func(c *v1.PersistentVolumeClaim) {
		c.Status.Conditions = append(c.Status.Conditions, v1.PersistentVolumeClaimCondition{
			Type: t, Status: v1.ConditionTrue, Message: msg, LastProbeTime: t0, LastTransitionTime: t0})
	}
}

func volume(mods ...func(*v1.PersistentVolume)) *v1.PersistentVolume {
	pv := &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pv-1"},
		Spec: v1.PersistentVolumeSpec{VolumeAttributesClassName: ptr.To("standard"),
			ClaimRef:               &v1.ObjectReference{Namespace: "ns", Name: "data", UID: "uid-data"},
			PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: driver, VolumeHandle: "h"}}},
	}
	for _, m := range mods {
		m(pv)
	}
	return pv
}

func vac(name string) *storagev1.VolumeAttributesClass {
	return &storagev1.VolumeAttributesClass{ObjectMeta: metav1.ObjectMeta{Name: name}, DriverName: driver,
		Parameters: map[string]string{"tier": name}}
}

func facts(c *v1.PersistentVolumeClaim, mods ...func(*Facts)) Facts {
	f := Facts{Claim: c, Volume: volume(), Served: true, CanModify: true,
		Classes: map[string]*storagev1.VolumeAttributesClass{"standard": vac("standard"), "fast": vac("fast")}}
	for _, m := range mods {
		m(&f)
	}
	return f
}

func metav1Later() metav1.Time { return metav1.NewTime(t1.Add(time.Hour)) }
