package doctor

import (
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// roomWorld: the case, a 500Gi claim of a WaitForFirstConsumer
// class whose driver tracks capacity, its pod unscheduled, on nodes n1
// and n2 that publish room (capacity, maximumVolumeSize; "" none) and n3
// that publishes nothing.
func roomWorld(size string, rooms map[string][2]string) *world {
	c := claim("huge", pending(10*time.Minute))
	c.Spec.StorageClassName = ptr.To("local")
	c.Spec.Resources.Requests[v1.ResourceStorage] = resource.MustParse(size)
	w := newWorld().classes(class("local", hostpathDriver, true)).claims(c).pods(pod("huge-pod", "", "huge")).
		nodes(node("n1"), node("n2"), node("n3"))
	w.s.Drivers = []*storagev1.CSIDriver{{ObjectMeta: metav1.ObjectMeta{Name: hostpathDriver},
		Spec: storagev1.CSIDriverSpec{StorageCapacity: ptr.To(true)}}}
	for n, room := range rooms {
		o := &storagev1.CSIStorageCapacity{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "csisc-" + n},
			StorageClassName: "local", NodeTopology: &metav1.LabelSelector{MatchLabels: map[string]string{topoKey: n}},
			Capacity: ptr.To(resource.MustParse(room[0]))}
		if room[1] != "" {
			o.MaximumVolumeSize = ptr.To(resource.MustParse(room[1]))
		}
		w.s.Capacities = append(w.s.Capacities, o)
	}
	return w
}

func commandsOf(f Finding) []string {
	var out []string
	for _, fix := range f.Fixes {
		out = append(out, fix.Command)
	}
	return out
}

// A claim no node can hold is a problem that says so node by node, with
// the steps to ask for at most the largest room a node has, or to make
// room; every command names the claim's own namespace and name only.
func TestClaimNoNodeCanHoldIsAProblemWithItsFixes(t *testing.T) {
	w := roomWorld("500Gi", map[string][2]string{"n1": {"100Gi", ""}, "n2": {"300Gi", "200Gi"}})
	r := Check(&w.s, thresholds)
	if len(r.Findings) != 1 {
		t.Fatalf("findings %+v", r.Findings)
	}
	f := r.Findings[0]
	for _, want := range []string{"No node can hold this claim's 500Gi of class local", "n1 has 100Gi", "n2 has 200Gi", "n3 publishes none"} {
		if !strings.Contains(f.Problem, want) {
			t.Errorf("problem %q lacks %q", f.Problem, want)
		}
	}
	if f.Kind != KindClaimPending || f.Severity != SeverityProblem || f.Object != (Object{Kind: ObjectClaim, Namespace: "ns", Name: "huge"}) {
		t.Errorf("finding %+v", f)
	}
	want := []string{"volplane kubectl -n ns get pvc huge -o yaml > huge.yaml", "volplane kubectl -n ns replace --force -f huge.yaml",
		"volplane kubectl get csistoragecapacities --all-namespaces", "volplane explain pvc ns/huge"}
	if got := commandsOf(f); !slices.Equal(got, want) {
		t.Errorf("fixes %q, want %q", got, want)
	}
	if !strings.Contains(f.Fixes[0].Says, "lower `storage: 500Gi` to at most 200Gi (the most a node has room for, n2)") {
		t.Errorf("first fix says %q", f.Fixes[0].Says)
	}
	if f.Fixes[1].Risk == "" || f.Fixes[0].Risk != "" || !strings.Contains(f.Fixes[2].Says, "free space of class local on a node, or add a node") {
		t.Errorf("fixes %+v", f.Fixes)
	}
}

// When no node publishes any capacity there is no size to ask for: only
// making room is offered.
func TestClaimNoNodePublishesOffersOnlyRoom(t *testing.T) {
	r := Check(&roomWorld("500Gi", nil).s, thresholds)
	if len(r.Findings) != 1 {
		t.Fatalf("findings %+v", r.Findings)
	}
	want := []string{"volplane kubectl get csistoragecapacities --all-namespaces", "volplane explain pvc ns/huge"}
	if got := commandsOf(r.Findings[0]); !slices.Equal(got, want) {
		t.Errorf("fixes %q, want %q", got, want)
	}
}

// A claim some node can hold gets no room fixes: its pending is the
// scheduler's or the driver's, and explain says which.
func TestClaimSomeNodeCanHoldGetsNoRoomFixes(t *testing.T) {
	r := Check(&roomWorld("50Gi", map[string][2]string{"n1": {"100Gi", ""}}).s, thresholds)
	if len(r.Findings) != 1 {
		t.Fatalf("findings %+v", r.Findings)
	}
	f := r.Findings[0]
	if strings.Contains(f.Problem, "No node can hold") || !slices.Equal(commandsOf(f), []string{"volplane explain pvc ns/huge"}) {
		t.Errorf("finding %+v", f)
	}
}
