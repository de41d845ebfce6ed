package ephemeral

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func pod(vols ...string) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "ns", UID: "pod-uid"}}
	for _, name := range vols {
		src := v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{VolumeClaimTemplate: &v1.PersistentVolumeClaimTemplate{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"l": name}, Annotations: map[string]string{"a": name}},
			Spec: v1.PersistentVolumeClaimSpec{AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
				Resources: v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse("1Gi")}}},
		}}}
		if name == "empty" {
			src = v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{}}
		}
		p.Spec.Volumes = append(p.Spec.Volumes, v1.Volume{Name: name, VolumeSource: src})
	}
	return p
}

func claim(name string, owner *metav1.OwnerReference) *v1.PersistentVolumeClaim {
	c := &v1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns"}}
	if owner != nil {
		c.OwnerReferences = []metav1.OwnerReference{*owner}
	}
	return c
}

func ownerRef(uid types.UID, controller bool) *metav1.OwnerReference {
	return &metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: "app", UID: uid, Controller: ptr.To(controller)}
}

func claims(cs ...*v1.PersistentVolumeClaim) func(string) *v1.PersistentVolumeClaim {
	return func(name string) *v1.PersistentVolumeClaim {
		for _, c := range cs {
			if c.Name == name {
				return c
			}
		}
		return nil
	}
}

// The cases of the reference's TestSyncHandler, and the hostile ones: a
// claim pre-created under the volume's name, owner references forged by
// name, or naming the pod without controller=true.
func TestDecide(t *testing.T) {
	mine := ownerRef("pod-uid", true)
	cases := []struct {
		name   string
		pod    *v1.Pod
		claims func(string) *v1.PersistentVolumeClaim
		want   []Decision
	}{
		{"no ephemeral volume", pod("empty"), claims(), nil},
		{"missing claim is created", pod("empty", "scratch"), claims(),
			[]Decision{{Volume: "scratch", Claim: "app-scratch", Action: Create, Reason: ReasonMissing}}},
		{"the pod's claim is left alone", pod("scratch"), claims(claim("app-scratch", mine)),
			[]Decision{{Volume: "scratch", Claim: "app-scratch", Action: None, Reason: ReasonOwned}}},
		{"a claim pre-created by a user is a conflict", pod("scratch"), claims(claim("app-scratch", nil)),
			[]Decision{{Volume: "scratch", Claim: "app-scratch", Action: Conflict, Reason: ReasonNotOwned}}},
		{"an owner reference forged by the pod's name is a conflict", pod("scratch"), claims(claim("app-scratch", ownerRef("guessed", true))),
			[]Decision{{Volume: "scratch", Claim: "app-scratch", Action: Conflict, Reason: ReasonNotOwned}}},
		{"an owner reference without controller=true is a conflict", pod("scratch"), claims(claim("app-scratch", ownerRef("pod-uid", false))),
			[]Decision{{Volume: "scratch", Claim: "app-scratch", Action: Conflict, Reason: ReasonNotOwned}}},
		{"a claim of the pod's earlier namesake is a conflict", pod("scratch"), claims(claim("app-scratch", ownerRef("old-pod-uid", true))),
			[]Decision{{Volume: "scratch", Claim: "app-scratch", Action: Conflict, Reason: ReasonNotOwned}}},
		{"volumes after a conflict wait", pod("a", "b", "c"), claims(claim("app-a", mine), claim("app-b", nil)),
			[]Decision{{Volume: "a", Claim: "app-a", Action: None, Reason: ReasonOwned},
				{Volume: "b", Claim: "app-b", Action: Conflict, Reason: ReasonNotOwned}}},
	}
	for _, tc := range cases {
		got := Decide(tc.pod, tc.claims)
		if len(got) != len(tc.want) {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%s: decision %d %+v, want %+v", tc.name, i, got[i], tc.want[i])
			}
		}
	}
	deleting := pod("scratch")
	deleting.DeletionTimestamp = &metav1.Time{}
	if d := Decide(deleting, claims()); d != nil || HasEphemeral(deleting) {
		t.Errorf("a pod being deleted got %+v", d)
	}
	if HasEphemeral(pod("empty")) || !HasEphemeral(pod("empty", "scratch")) {
		t.Error("HasEphemeral")
	}
}

// A claim in another namespace is never the pod's, whatever its owner.
func TestClaimOfAnotherNamespaceIsAConflict(t *testing.T) {
	c := claim("app-scratch", ownerRef("pod-uid", true))
	c.Namespace = "other"
	if d := Decide(pod("scratch"), claims(c)); len(d) != 1 || d[0].Action != Conflict {
		t.Errorf("%+v", d)
	}
}

// The claim made takes the template's labels, annotations and spec, and is
// controlled by the pod; a namespace, name, owner or finalizer in the
// template is ignored.
func TestNewClaimTakesOnlyWhatTheReferenceTakes(t *testing.T) {
	p := pod("scratch")
	tmpl := p.Spec.Volumes[0].Ephemeral.VolumeClaimTemplate
	tmpl.Namespace, tmpl.Name = "victim", "stolen"
	tmpl.Finalizers = []string{"evil/hold"}
	tmpl.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: "other", UID: "x"}}
	c := NewClaim(p, &p.Spec.Volumes[0])
	if c.Namespace != "ns" || c.Name != "app-scratch" || len(c.Finalizers) != 0 {
		t.Errorf("claim %s/%s finalizers %v", c.Namespace, c.Name, c.Finalizers)
	}
	if len(c.OwnerReferences) != 1 {
		t.Fatalf("owners %+v", c.OwnerReferences)
	}
	o := c.OwnerReferences[0]
	if o.Kind != "Pod" || o.APIVersion != "v1" || o.Name != "app" || o.UID != "pod-uid" || !ptr.Deref(o.Controller, false) || !ptr.Deref(o.BlockOwnerDeletion, false) {
		t.Errorf("owner %+v", o)
	}
	if c.Labels["l"] != "scratch" || c.Annotations["a"] != "scratch" || c.Spec.Resources.Requests.Storage().String() != "1Gi" {
		t.Errorf("claim %+v", c)
	}
	c.Labels["l"] = "changed"
	if tmpl.Labels["l"] != "scratch" {
		t.Error("the claim shares the template's labels")
	}
	if got := (Decision{Volume: "scratch", Claim: "app-scratch"}).Message(p); got !=
		"ephemeral volume scratch: PVC ns/app-scratch was not created for pod ns/app (pod is not owner)" {
		t.Errorf("message %q", got)
	}
}
