package invariants

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// sized is healthy() with sizes: claim a asks for and has 1Gi, its PV and
// backend volume hold 1Gi.
func sized() State {
	s := healthy()
	gi := resource.MustParse("1Gi")
	s.Claims[0].Spec.Resources.Requests = v1.ResourceList{v1.ResourceStorage: gi}
	s.Claims[0].Status.Capacity = v1.ResourceList{v1.ResourceStorage: gi}
	s.PVs[0].Spec.Capacity = v1.ResourceList{v1.ResourceStorage: gi}
	s.Backends[0].Capacity = map[string]int64{"vol-a": gi.Value()}
	return s
}

func TestResizedReportsEachBrokenPromiseOfExpansion(t *testing.T) {
	if got := Resized(sized()); len(got) != 0 {
		t.Fatalf("violations at rest: %q", got)
	}
	for name, tc := range map[string]struct {
		change func(*State)
		want   string
	}{
		"claim reports more than its PV": {func(s *State) {
			s.Claims[0].Status.Capacity[v1.ResourceStorage] = resource.MustParse("2Gi")
		}, "claim ns/a reports 2Gi, its PV 1Gi"},
		"PV says more than the backend": {func(s *State) { s.Backends[0].Capacity["vol-a"] = 1 << 20 }, "PV pv-a says 1Gi, the backend holds 1Mi"},
		"backend volume gone":           {func(s *State) { s.Backends[0].VolumeIDs = nil }, "PV pv-a says 1Gi, the backend holds 0"},
		"resize status left": {func(s *State) {
			s.Claims[0].Status.AllocatedResourceStatuses = map[v1.ResourceName]v1.ClaimResourceStatus{v1.ResourceStorage: v1.PersistentVolumeClaimNodeResizePending}
		}, "claim ns/a at rest with resize status map[storage:NodeResizePending]"},
	} {
		t.Run(name, func(t *testing.T) {
			s := sized()
			tc.change(&s)
			if got := Resized(s); !slices.Contains(got, tc.want) {
				t.Errorf("Resized = %q, want it to say %q", got, tc.want)
			}
		})
	}
}

func TestAttributesReportsEachBrokenPromiseOfAttributesClasses(t *testing.T) {
	classes := []storagev1.VolumeAttributesClass{{ObjectMeta: metav1.ObjectMeta{Name: "fast"}, DriverName: local, Parameters: map[string]string{"tier": "fast"}}}
	at := func() State {
		s := healthy()
		s.Claims[0].Status.CurrentVolumeAttributesClassName = ptr.To("fast")
		s.PVs[0].Spec.VolumeAttributesClassName = ptr.To("fast")
		s.Backends[0].Parameters = map[string]map[string]string{"vol-a": {"tier": "fast"}}
		return s
	}
	if got := Attributes(at(), classes); len(got) != 0 {
		t.Fatalf("violations at rest: %q", got)
	}
	for name, tc := range map[string]struct {
		change func(*State)
		want   string
	}{
		"claim and PV disagree": {func(s *State) { s.PVs[0].Spec.VolumeAttributesClassName = nil }, `claim ns/a at rest has class "fast", its PV ""`},
		"modify condition left": {func(s *State) {
			s.Claims[0].Status.Conditions = []v1.PersistentVolumeClaimCondition{{Type: v1.PersistentVolumeClaimVolumeModifyVolumeError}}
		}, "claim ns/a at rest keeps condition ModifyVolumeError"},
		"driver holds other parameters": {func(s *State) { s.Backends[0].Parameters["vol-a"]["tier"] = "slow" }, `PV pv-a has class fast but the driver holds tier="slow"`},
	} {
		t.Run(name, func(t *testing.T) {
			s := at()
			tc.change(&s)
			if got := Attributes(s, classes); !slices.Contains(got, tc.want) {
				t.Errorf("Attributes = %q, want it to say %q", got, tc.want)
			}
		})
	}
}

// What a test began with is not reported again; what it breaks is.
func TestBackendsLeavesOutWhatTheTestBeganWith(t *testing.T) {
	s := healthy()
	for i := range s.PVs {
		s.PVs[i].UID = types.UID("uid-" + s.PVs[i].Name)
	}
	s.Backends[2].VolumeIDs = append(s.Backends[2].VolumeIDs, "vol-stray")
	s.Backends[0].VolumeIDs = nil // pv-a's volume gone
	left := Before(s)
	if got := Backends(s, left); len(got) != 0 {
		t.Fatalf("reported again: %q", got)
	}
	s.Backends[2].VolumeIDs = append(s.Backends[2].VolumeIDs, "vol-new")
	s.Backends[2].VolumeIDs = slices.DeleteFunc(s.Backends[2].VolumeIDs, func(id string) bool { return id == "vol-b" })
	got := Backends(s, left)
	want := []string{"PV pv-b (phase , claim ns/c-ub (uid ub)): its backend volume vol-b of network.csi is gone", "backend volume vol-new of network.csi has no PV"}
	if !slices.Equal(got, want) {
		t.Errorf("Backends = %q, want %q", got, want)
	}
}

// A PV being deleted may have lost its volume already; its volume, while
// there, is still its own.
func TestBackendsLeavesAPVBeingDeletedToTerminating(t *testing.T) {
	s := healthy()
	s.PVs[0].DeletionTimestamp = &metav1.Time{}
	if got := Backends(s, Leftovers{}); len(got) != 0 {
		t.Errorf("with its volume: %q", got)
	}
	s.Backends[0].VolumeIDs = nil
	if got := Backends(s, Leftovers{}); len(got) != 0 {
		t.Errorf("without its volume: %q", got)
	}
}
