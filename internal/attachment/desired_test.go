package attachment

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestPodWithBoundCSIClaimGetsTheReferenceVolumeAttachment(t *testing.T) {
	w := newWorld()
	w.volume("data")
	w.pod("app", node, "data")
	p := Decide(w.f)
	if len(p.Create) != 1 {
		t.Fatalf("Create = %v, want one attachment", p.Create)
	}
	va := p.Create[0].Attachment
	if va.Name != Name("h-data", drv, node) || va.Spec.Attacher != drv || va.Spec.NodeName != node ||
		va.Spec.Source.PersistentVolumeName == nil || *va.Spec.Source.PersistentVolumeName != "pv-data" ||
		va.Spec.Source.InlineVolumeSpec != nil {
		t.Errorf("attachment %+v is not the reference's", va)
	}
	if va.Labels != nil || va.Annotations != nil || va.Finalizers != nil {
		t.Errorf("attachment carries metadata: %+v", va.ObjectMeta)
	}
	if len(p.VolumesAttached) != 0 || p.StatusChanged || len(p.Events) != 0 {
		t.Errorf("nothing is attached yet: %+v", p)
	}
}

func TestVolumesThatCannotBeResolvedWaitWithTheirReason(t *testing.T) {
	for name, tc := range map[string]struct {
		mutate func(w *world)
		want   WaitReason
	}{
		"claim missing":          {func(w *world) { delete(w.f.Claims, "ns/data") }, ClaimNotFound},
		"claim pending":          {func(w *world) { w.f.Claims["ns/data"].Status.Phase = v1.ClaimPending }, ClaimNotBound},
		"claim without volume":   {func(w *world) { w.f.Claims["ns/data"].Spec.VolumeName = "" }, ClaimNotBound},
		"volume missing":         {func(w *world) { delete(w.f.Volumes, "pv-data") }, VolumeNotFound},
		"volume bound elsewhere": {func(w *world) { w.f.Volumes["pv-data"].Spec.ClaimRef.UID = "other" }, VolumeNotBoundToClaim},
	} {
		t.Run(name, func(t *testing.T) {
			w := newWorld()
			w.volume("data")
			w.f.Claims["ns/data"] = w.f.Claims["ns/data"].DeepCopy()
			w.f.Volumes["pv-data"] = w.f.Volumes["pv-data"].DeepCopy()
			w.pod("app", node, "data")
			tc.mutate(w)
			p := Decide(w.f)
			if len(p.Create) != 0 || !slices.Equal(reasons(p), []WaitReason{tc.want}) {
				t.Errorf("create %v waits %v, want only a %v wait", p.Create, reasons(p), tc.want)
			}
		})
	}
}

func TestEphemeralClaimOfThePodIsAttachedAndOneOfAnotherPodWaits(t *testing.T) {
	w := newWorld()
	pod := w.pod("app", node)
	pod.Spec.Volumes = []v1.Volume{{Name: "scratch", VolumeSource: v1.VolumeSource{Ephemeral: &v1.EphemeralVolumeSource{}}}}
	w.volume("app-scratch")
	w.f.Claims["ns/app-scratch"].OwnerReferences = []metav1.OwnerReference{{Kind: "Pod", Name: "app", UID: pod.UID, Controller: ptr.To(true)}}
	if p := Decide(w.f); len(p.Create) != 1 || *p.Create[0].Attachment.Spec.Source.PersistentVolumeName != "pv-app-scratch" {
		t.Fatalf("ephemeral claim owned by its pod: create %v waits %v", p.Create, reasons(p))
	}
	w.f.Claims["ns/app-scratch"].OwnerReferences[0].UID = "someone-else"
	if p := Decide(w.f); len(p.Create) != 0 || !slices.Equal(reasons(p), []WaitReason{ClaimNotOwned}) {
		t.Errorf("ephemeral claim of another pod: create %v waits %v", p.Create, reasons(p))
	}
}

func TestVolumesNeedingNoAttachmentAreLeftAlone(t *testing.T) {
	for name, mutate := range map[string]func(w *world){
		"driver with attachRequired false": func(w *world) { w.driver(ptr.To(false)) },
		"in-tree volume": func(w *world) {
			w.f.Volumes["pv-data"].Spec.CSI = nil
			w.f.Volumes["pv-data"].Spec.HostPath = &v1.HostPathVolumeSource{Path: "/x"}
		},
		"pod finished":             func(w *world) { w.f.Pods[0].Status.Phase = v1.PodSucceeded },
		"pod deleted, not running": func(w *world) { w.f.Pods[0].DeletionTimestamp = &metav1.Time{Time: t0} },
		"pod on another node":      func(w *world) { w.f.Pods[0].Spec.NodeName = "node-2" },
		"node not managed":         func(w *world) { w.f.Node.Managed = false },
	} {
		t.Run(name, func(t *testing.T) {
			w := newWorld()
			w.volume("data")
			w.f.Volumes["pv-data"] = w.f.Volumes["pv-data"].DeepCopy()
			w.pod("app", node, "data")
			mutate(w)
			if p := Decide(w.f); len(p.Create) != 0 || len(p.Wait) != 0 || len(p.Events) != 0 {
				t.Errorf("plan %+v, want nothing", p)
			}
		})
	}
}

func TestDriverWithAttachRequiredTrueOrUnsetOrNoCSIDriverNeedsAnAttachment(t *testing.T) {
	for name, setup := range map[string]func(w *world){
		"no CSIDriver":        func(*world) {},
		"attachRequired true": func(w *world) { w.driver(ptr.To(true)) },
		"attachRequired nil":  func(w *world) { w.driver(nil) },
	} {
		t.Run(name, func(t *testing.T) {
			w := newWorld()
			w.volume("data")
			w.pod("app", node, "data")
			setup(w)
			if p := Decide(w.f); len(p.Create) != 1 {
				t.Errorf("create %v, want one", p.Create)
			}
		})
	}
}

// A node that is not managed is not ours: even its attachments no pod
// wants are left for whoever made them.
func TestUnmanagedNodeIsIgnoredEntirely(t *testing.T) {
	w := newWorld()
	w.volume("data")
	w.attachment("data", node, true)
	w.f.Node.Managed = false
	if p := Decide(w.f); len(p.Detach) != 0 || p.StatusChanged {
		t.Errorf("plan %+v, want nothing", p)
	}
}
