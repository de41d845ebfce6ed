package expansion

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Builders with defaults: claim ns/claim1 (uid u1) Bound to pv1, request
// and capacity 1Mi; PV pv1 of driver d.csi.test, 1Mi, bound to the claim.
// Facts: a served driver with controller expansion.

func qty(s string) resource.Quantity { return resource.MustParse(s) }

func claim(mods ...func(*v1.PersistentVolumeClaim)) *v1.PersistentVolumeClaim {
	c := &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "claim1", UID: "u1"},
		Spec: v1.PersistentVolumeClaimSpec{VolumeName: "pv1",
			Resources: v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: qty("1Mi")}}},
		Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimBound,
			Capacity: v1.ResourceList{v1.ResourceStorage: qty("1Mi")}},
	}
	for _, m := range mods {
		m(c)
	}
	return c
}

func requesting(size string) func(*v1.PersistentVolumeClaim) {
	return func(c *v1.PersistentVolumeClaim) { c.Spec.Resources.Requests[v1.ResourceStorage] = qty(size) }
}

func allocated(size string) func(*v1.PersistentVolumeClaim) {
	return func(c *v1.PersistentVolumeClaim) {
		c.Status.AllocatedResources = v1.ResourceList{v1.ResourceStorage: qty(size)}
	}
}

func resizeStatus(s v1.ClaimResourceStatus) func(*v1.PersistentVolumeClaim) {
	return func(c *v1.PersistentVolumeClaim) {
		c.Status.AllocatedResourceStatuses = map[v1.ResourceName]v1.ClaimResourceStatus{v1.ResourceStorage: s}
	}
}

func withCondition(typ v1.PersistentVolumeClaimConditionType, msg string) func(*v1.PersistentVolumeClaim) {
	return func(c *v1.PersistentVolumeClaim) {
		c.Status.Conditions = append(c.Status.Conditions, v1.PersistentVolumeClaimCondition{Type: typ, Status: v1.ConditionTrue, Message: msg})
	}
}

func annotated(key, value string) func(*v1.PersistentVolumeClaim) {
	return func(c *v1.PersistentVolumeClaim) { metav1.SetMetaDataAnnotation(&c.ObjectMeta, key, value) }
}

func pv(mods ...func(*v1.PersistentVolume)) *v1.PersistentVolume {
	p := &v1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv1"}, Spec: v1.PersistentVolumeSpec{
		Capacity:               v1.ResourceList{v1.ResourceStorage: qty("1Mi")},
		ClaimRef:               &v1.ObjectReference{Namespace: "ns", Name: "claim1", UID: "u1"},
		PersistentVolumeSource: v1.PersistentVolumeSource{CSI: &v1.CSIPersistentVolumeSource{Driver: "d.csi.test", VolumeHandle: "h1"}},
	}}
	for _, m := range mods {
		m(p)
	}
	return p
}

func sized(size string) func(*v1.PersistentVolume) {
	return func(p *v1.PersistentVolume) { p.Spec.Capacity[v1.ResourceStorage] = qty(size) }
}

func facts(c *v1.PersistentVolumeClaim, p *v1.PersistentVolume, mods ...func(*Facts)) Facts {
	f := Facts{Claim: c, Volume: p, Served: true, ControllerExpand: true, NodeExpand: true}
	for _, m := range mods {
		m(&f)
	}
	return f
}

func finalErrorSeen(f *Facts)    { f.FinalErrorSeen = true }
func infeasibleBackoff(f *Facts) { f.InfeasibleBackoff = true }
func nodeOnly(f *Facts)          { f.ControllerExpand = false }
