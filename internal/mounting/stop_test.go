package mounting

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// A clean stop undoes every publication and staging found on disk, done
// or not, whatever the pods, and nothing else: no deletion finished, no
// volumesInUse written.
func TestStopPlanUndoesEveryMountAndNothingElse(t *testing.T) {
	running := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "u1"}, Spec: corev1.PodSpec{NodeName: "n"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	w := World{Node: "n", Registered: true, Pods: []*corev1.Pod{running},
		Reported: []corev1.UniqueVolumeName{"kubernetes.io/csi/d^h1"},
		Staged:   []Staged{{Driver: "d", Handle: "h1", PV: "pv1", Done: true}, {Driver: "d", Handle: "h2", PV: "pv2"}},
		Published: []Published{{PodUID: "u1", Driver: "d", Handle: "h1", PV: "pv1", Done: true},
			{PodUID: "u2", Driver: "d", Handle: "h2", PV: "pv2"}},
		PodDirs: []types.UID{"u1", "u2"}}
	plan := StopPlan(w)
	if len(plan.Unpublish) != 2 || len(plan.Unstage) != 2 {
		t.Errorf("unpublish %v unstage %v, want all", plan.Unpublish, plan.Unstage)
	}
	if len(plan.Finish) != 0 || len(plan.Pods) != 0 || len(plan.RemovePodDirs) != 0 || plan.Node != Unregistered || plan.VolumesInUse != nil {
		t.Errorf("a stop plans more than the unmounts: %+v", plan)
	}
	plan.Unpublish[0].PV = "changed"
	if w.Published[0].PV != "pv1" {
		t.Error("the plan shares the world's records")
	}
}
